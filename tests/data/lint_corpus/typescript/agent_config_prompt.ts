import { Agent } from "../types/agent.js";

export const createDefaultPrompt = (agent: Agent) => `
You are ${agent.name}. Your personality is: ${agent.personality}.
Your instructions are: ${agent.system}. Use your tools.
Answer the message with a series of tool calls.
`;
