package agent

import (
	"fmt"
	"strings"
	"time"
)

// PromptConfig sets what goes into the system prompt.
type PromptConfig struct {
	AgentName   string
	AgentID     string
	Model       string
	Tools       []ToolDef
	ChannelID   string
	ChatType    string
	UserName    string
	ExtraPrompt string
}

// BuildSystemPrompt writes the system prompt for the model.
func BuildSystemPrompt(cfg PromptConfig) string {
	var b strings.Builder

	// Who the agent is
	//b.WriteString(fmt.Sprintf("You are %s, a handy helper run by Larkspur.\n\n", cfg.AgentName))

	// The day
	b.WriteString(fmt.Sprintf("Today is: %s\n", time.Now().Format("2006-01-02")))

	// Where the chat happens
	if cfg.ChannelID != "" {
		b.WriteString(fmt.Sprintf("Channel: %s\n", cfg.ChannelID))
	}
	if cfg.ChatType != "" {
		b.WriteString(fmt.Sprintf("Chat kind: %s\n", cfg.ChatType))
	}
	if cfg.UserName != "" {
		b.WriteString(fmt.Sprintf("Person: %s\n", cfg.UserName))
	}

	b.WriteString("\n")

	// House rules
	b.WriteString("House rules:\n")
	//b.WriteString("- Be useful, brief, and correct.\n")
	//b.WriteString("- When unsure, say so instead of guessing.\n")
	b.WriteString("- When you call a tool, say what you are about to do.\n")
	//b.WriteString("- Use markdown where it reads better.\n")

	// Tools
	if len(cfg.Tools) > 0 {
		b.WriteString("\n## Tools You Can Call\n\n")
		b.WriteString("Call a tool by writing a fenced code block tagged with the language `tool_call`:\n\n")
		b.WriteString("```tool_call\n{\"tool\": \"tool_name\", \"input\": {\"param\": \"value\"}}\n```\n\n")
		b.WriteString("Once the tool has run, you will see its output. You may call several tools before you write your final reply.\n\n")
		for _, t := range cfg.Tools {
			fmt.Fprintf(&b, "### %s\n%s\n", t.Name, t.Description)
			if t.InputSchema != "" {
				fmt.Fprintf(&b, "Input shape: %s\n", t.InputSchema)
			}
			b.WriteString("\n")
		}
	}

	// Operator's own text
	if cfg.ExtraPrompt != "" {
		b.WriteString("\n")
		b.WriteString(cfg.ExtraPrompt)
		b.WriteString("\n")
	}

	return b.String()
}
