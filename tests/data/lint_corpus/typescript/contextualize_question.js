import {
    ChatPromptTemplate,
    MessagesPlaceholder,
  } from "@langchain/core/prompts";

  const contextualizeSystemPrompt = `Given the chat so far and the user's latest question,
  which may refer to something earlier in the chat, rewrite the question so that it can be understood
  on its own. Do NOT answer it; rewrite it only if needed, else return it unchanged.`;

  const contextualizePrompt = ChatPromptTemplate.fromMessages([
    ["system", contextualizeSystemPrompt],
    new MessagesPlaceholder("chat_history"),
    ["human", "{question}"],
  ]);
