import { Agent } from '@mastra/core/agent';
import { openai } from '@ai-sdk/openai';

export const myAgent = new Agent({
  id: 'my-agent',
  name: 'My Agent',
  instructions: 'You answer questions about the garden centre opening hours.',
  model: openai('gpt-5.1'),
});

export const contentCreatorAgent = new Agent({
  id: 'content-creator-agent',
  name: 'Content Creator Agent',
  instructions: 'Write short seasonal planting tips for the newsletter.',
  model: openai('gpt-5.1'),
});
