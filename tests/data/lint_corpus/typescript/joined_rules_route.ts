import { tools } from '@/utils/ai';
import { google } from '@ai-sdk/google';
import { streamText } from 'ai';

const SYSTEM_PROMPT = [
    'You are a personal sleep coach.',
    'Answer in plain text, without markdown.',
    'Answer in the language of the question. Default to English.',
    'Chain tools when it helps, for instance read the sleep log and then chart it.',
    'Prefer a chart to a list of numbers.',
    'Never call the same tool twice with the same arguments.',
].join(' ');

export async function POST(req: Request) {
    const { messages } = await req.json();

    const today = new Date().toLocaleString('en', { day: 'numeric', month: 'long', weekday: 'long', year: 'numeric' });

    const result = streamText({
        model: google('gemini-2.0-flash-001'),
        messages,
        system: SYSTEM_PROMPT + ` For your information, today is ${today}.`,
        tools,
    });

    return result.toDataStreamResponse();
}
