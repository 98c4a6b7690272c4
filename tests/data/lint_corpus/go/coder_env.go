package prompt

import (
	_ "embed"
	"fmt"
	"runtime"
	"time"

	"github.com/example/coder/internal/config"
	"github.com/example/coder/internal/llm/tools"
)

func CoderPrompt(contextFiles ...string) string {
	envInfo := getEnvironmentInfo()
	return fmt.Sprintf("%s\n\n%s\n%s", string(basePrompt), envInfo, lspInformation())
}

//go:embed base.md
var basePrompt []byte

func getEnvironmentInfo() string {
	cwd := config.Get().WorkingDir()
	platform := runtime.GOOS
	date := time.Now().Format("1/2/2006")
	output, _ := tools.ListDirectoryTree(cwd, nil)
	return fmt.Sprintf(`Facts about the machine you run on:
<env>
Working directory: %s
Platform: %s
Today's date: %s
</env>
<project>
%s
</project>
		`, cwd, platform, date, output)
}

func lspInformation() string {
	cfg := config.Get()
	if len(cfg.LSP) == 0 {
		return ""
	}
	return `# Language servers
Some tools also report diagnostics from the language servers, such as type errors and lint warnings.
- The diagnostics appear at the end of a tool's output, in <file_diagnostics> and <project_diagnostics> tags.
- Fix the problems your own change caused.
- Leave alone the diagnostics of files you did not change, unless the user asks you to fix them.
`
}
