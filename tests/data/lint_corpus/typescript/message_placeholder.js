import {
  ChatPromptTemplate,
  MessagesPlaceholder,
} from "@langchain/core/prompts";
import { HumanMessage } from "@langchain/core/messages";

const promptTemplate = ChatPromptTemplate.fromMessages([
  ["system", "You are a patient tutor for beginning cooks."],
  new MessagesPlaceholder("msgs"),
]);

const result = await promptTemplate.invoke({ msgs: [new HumanMessage("How do I poach an egg?")] });
console.log(result);
