import {
  ChatPromptTemplate,
  MessagesPlaceholder,
} from '@langchain/core/prompts';

export const chatPromptTemplate = ChatPromptTemplate.fromMessages([
  {
    role: 'system',
    content:
      'You are a helpful assistant. Answer in Markdown and use headings, lists and tables where they make the answer easier to scan.',
  },
  new MessagesPlaceholder('messages'),
]);
