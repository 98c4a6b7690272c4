import Anthropic from "@anthropic-ai/sdk";
import { retrieveContext } from "@/app/lib/utils";
import supportTopics from "@/app/lib/support_topics.json";

const anthropic = new Anthropic({ apiKey: process.env.ANTHROPIC_API_KEY });

export async function POST(req: Request) {
  const { messages } = await req.json();
  const latestMessage = messages[messages.length - 1].content;
  let retrievedContext = "";
  let isRagWorking = false;
  try {
    retrievedContext = await retrieveContext(latestMessage);
    isRagWorking = true;
  } catch (error) {
    retrievedContext = "";
    isRagWorking = false;
  }

  const USE_TOPICS = true;
  const topicList = supportTopics.topics.map((t) => t.id).join(", ");
  const topicsContext = USE_TOPICS
    ? `
    Please also tag each question with the topics it belongs to; there are ${supportTopics.topics.length} of them.
    The topics are: ${topicList}
    Use several when several apply, none when none does.
  `
    : "";

  const systemPrompt = `You are the help desk assistant of a small hardware shop, answering in a chat window.
  Be brief, friendly and precise.

  We looked up these notes for the question. They may not be relevant:
  ${isRagWorking ? `${retrievedContext}` : "No notes were found for this question."}

  Answer only from what you were given. If nothing fits, offer to hand the chat to a person.

  ${topicsContext}

  If the question has nothing to do with the shop, hand the chat to a person.

  Format the whole reply as one JSON object:
  {
      "thinking": "How you decided to answer",
      "response": "The answer itself",
      "mood": "calm|curious|annoyed|confused",
      "follow_ups": ["Question 1?", "Question 2?"],
      ${USE_TOPICS ? '"topics": ["topic_1", "topic_2"],' : ""}
      "handoff": { "needed": false, "reason": "Why, when needed" }
  }

  An example without a handoff:
  {
    "thinking": "The notes cover the return window",
    "response": "You can return unopened items within thirty days.",
    "mood": "calm",
    "follow_ups": ["How do I print a label?", "Can I exchange instead?"],
    "topics": ["returns"],
    "handoff": { "needed": false }
  }

  An example with a handoff:
  {
    "thinking": "A damaged delivery needs a person",
    "response": "I am sorry about that. Let me pass you to a colleague who can arrange a replacement.",
    "mood": "annoyed",
    "follow_ups": [],
    "topics": ["deliveries"],
    "handoff": { "needed": true, "reason": "Damaged goods need a manual claim" }
  }
  `;

  const response = await anthropic.messages.create({
    model: "claude-3-5-sonnet-20241022",
    max_tokens: 1000,
    system: systemPrompt,
    messages,
  });
  return new Response(JSON.stringify(response));
}
