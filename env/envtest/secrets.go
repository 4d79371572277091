package envtest

// FakeSecrets are variables for tests that start programs and check what they inherit:
// names as people write them, each value carrying a marker (MARKER1 … MARKER8) no other
// variable holds, so an output that holds a marker leaked that variable.
var FakeSecrets = map[string]string{
	"ANTHROPIC_API_KEY":     "sk-ant-test-MARKER1abcdefghij",
	"OPENAI_API_KEY":        "sk-test-MARKER2",
	"GITHUB_TOKEN":          "ghp_MARKER3abcdefghijklmnopqrstuvwxyz",
	"MY_SERVICE_PASSWORD":   "MARKER4-hunter2",
	"DATABASE_URL":          "postgres://u:MARKER5@h/db",
	"AWS_SECRET_ACCESS_KEY": "MARKER6wJalrXUtnFEMI/K7MDENG",
	"DEPLOY_NOTE":           "xoxb-MARKER7-1234567890",
	"SSH_AUTH_SOCK":         "/tmp/MARKER8-agent.sock",
}
