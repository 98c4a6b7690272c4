/**
 * The current date, as a prompt fragment appended at the end of a prompt.
 */
export function getCurrentDatePrompt() {
    return `The current date is ${new Date().toISOString()}`;
}
