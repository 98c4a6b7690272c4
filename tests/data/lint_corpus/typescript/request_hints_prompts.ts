import type { Geo } from '@vercel/functions';

export const artifactsPrompt = `
Side panels are a special view for long writing and code. When a panel is open it sits on the right and the
conversation stays on the left. Edits to a document appear in the panel as they are made.

Use a panel for code, and say which language the code is in. Only one language is supported for running code.

Do not edit a document right after creating it; wait for the user to ask for changes.

When to open a panel:
- For content longer than ten lines, or for code
- For content the user will keep and reuse
- When the user asks for a document

When not to open a panel:
- For short explanations
- For small talk
- When the user asks to keep it in the chat
`;

export const regularPrompt = `You are a research helper with tools for notes, messages and calendars. Chain tools when it helps, and always say where a fact came from.`;

export interface RequestHints {
  longitude: Geo['longitude'];
  latitude: Geo['latitude'];
  city: Geo['city'];
  country: Geo['country'];
  email?: string;
  name?: string;
}

export const getRequestPromptFromHints = (requestHints: RequestHints) => `\
What we know about where the request comes from:
- lat: ${requestHints.latitude}
- lon: ${requestHints.longitude}
- city: ${requestHints.city}
- country: ${requestHints.country}
- email: ${requestHints.email}
- name: ${requestHints.name}

Use these only when they make the answer more useful.`;

export const systemPrompt = ({
  selectedChatModel,
  requestHints,
}: {
  selectedChatModel: string;
  requestHints: RequestHints;
}) => {
  const requestPrompt = getRequestPromptFromHints(requestHints);

  if (selectedChatModel === 'chat-model-reasoning') {
    return `${regularPrompt}\n\n${requestPrompt}`;
  } else {
    return `${regularPrompt}\n\n${requestPrompt}\n\n${artifactsPrompt}`;
  }
};
