import { createOpenAI } from '@ai-sdk/openai';
import { streamText, tool } from 'ai';
import { z } from 'zod';

export const maxDuration = 60;

const local = createOpenAI({
    baseURL: 'http://localhost:1234/v1',
    apiKey: 'not-needed',
});

export async function POST(req: Request) {
    const { messages } = await req.json();

    const systemPrompt = `You are the front-desk assistant of a small physiotherapy clinic.
    You know the clinic's opening hours, its therapists and its booking rules.
    
    Current Date: ${new Date().toLocaleDateString()}
    
    You can look up appointments and the clinic's handbook with the tools below.
    Use them before you answer a question about a booking or a rule.
    
    Guidelines:
    1. Think the question through before you answer.
    2. Name the handbook section you rely on.
    3. If something is missing, ask for it, or say where it can be found.
    4. Never share one patient's details with another.`;

    const result = streamText({
        model: local('local-model'),
        messages,
        system: systemPrompt,
        tools: {
            findAppointments: tool({
                description: 'Find appointments by patient name.',
                parameters: z.object({ query: z.string() }),
                execute: async ({ query }) => ({ query }),
            }),
        },
    });

    return result.toTextStreamResponse();
}
