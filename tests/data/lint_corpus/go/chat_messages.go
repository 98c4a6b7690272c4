package chat

import (
	"context"
	"fmt"

	openai "github.com/sashabaranov/go-openai"
)

const guidelines = `Follow these guidelines:
- Use the order number format ORD followed by eight digits when you refer to an order.
- Refunds are possible within thirty days of delivery for items in their original packaging.
- Never promise a delivery date; give the carrier's estimate and say that it is an estimate.
- If the customer is upset, acknowledge it in one sentence and move on to the solution.
- Escalate to a human agent when the customer asks for one or mentions a legal complaint.
- Do not discuss competitors, internal tools, or how this assistant was built.
- Keep answers under one hundred and twenty words unless the customer asks for detail.
- When a policy does not cover the case, say so and offer to open a ticket for review.
- Close each reply by asking whether anything else about the order needs attention.
- Greet the customer once, then answer the question they asked before anything else.`

func Answer(ctx context.Context, client *openai.Client, customerName, question string) (string, error) {
	resp, err := client.CreateChatCompletion(ctx, openai.ChatCompletionRequest{
		Model: openai.GPT4o,
		Messages: []openai.ChatCompletionMessage{
			{Role: openai.ChatMessageRoleSystem, Content: "You are speaking with " + customerName + ".\n" + guidelines},
			{Role: openai.ChatMessageRoleUser, Content: question},
		},
	})
	if err != nil {
		return "", fmt.Errorf("chat: %w", err)
	}
	return resp.Choices[0].Message.Content, nil
}
