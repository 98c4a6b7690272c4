package agent

import (
	"github.com/cloudwego/eino/components/prompt"
	"github.com/cloudwego/eino/schema"
)

const (
	ChatSystemPrompt = `
	You know a lot about board games and answer questions about their rules and history.
	`
)

func newChatTemplate() prompt.ChatTemplate {
	return prompt.FromMessages(
		schema.GoTemplate,
		schema.SystemMessage(ChatSystemPrompt),
		schema.MessagesPlaceholder("history", false),
		schema.UserMessage("{{.prompt}}"),
	)
}
