package openaitest

import (
	"encoding/base64"
	"fmt"
	"regexp"
	"strings"
)

// toolName is the pattern the API requires of function names.
var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// validate checks body the way the API does where that is cheap, and returns the
// message of the 400 invalid_request_error the API would send, or "" when the request
// is acceptable.
func validate(body map[string]any) string {
	v := &validator{}
	v.request(body)
	return v.msg
}

type validator struct{ msg string }

// fail records the first problem only, as the API reports one at a time.
func (v *validator) fail(format string, args ...any) {
	if v.msg == "" {
		v.msg = fmt.Sprintf(format, args...)
	}
}

func (v *validator) request(body map[string]any) {
	if m, ok := body["model"].(string); !ok || m == "" {
		v.fail("you must provide a model parameter")
	}
	if s, ok := body["stream"]; ok {
		if _, ok := s.(bool); !ok {
			v.fail("Invalid type for 'stream': expected a boolean.")
		}
	}
	if so, ok := body["stream_options"]; ok && so != nil {
		if stream, _ := body["stream"].(bool); !stream {
			v.fail("The 'stream_options' parameter is only allowed when 'stream' is enabled.")
		}
	}
	for _, k := range []string{"max_tokens", "max_completion_tokens"} {
		if x, ok := body[k]; ok {
			if n, ok := x.(float64); !ok || n < 1 || n != float64(int64(n)) {
				v.fail("Invalid '%s': expected an integer greater than or equal to 1.", k)
			}
		}
	}
	v.tools(body["tools"])
	v.messages(body["messages"])
}

func (v *validator) tools(tools any) {
	if tools == nil {
		return
	}
	list, ok := tools.([]any)
	if !ok {
		v.fail("Invalid type for 'tools': expected an array.")
		return
	}
	seen := map[string]bool{}
	for i, t := range list {
		tool, ok := t.(map[string]any)
		if !ok || tool["type"] != "function" {
			v.fail("Invalid 'tools[%d]': expected a function tool.", i)
			continue
		}
		fn, ok := tool["function"].(map[string]any)
		if !ok {
			v.fail("Missing required parameter: 'tools[%d].function'.", i)
			continue
		}
		name, _ := fn["name"].(string)
		if !toolName.MatchString(name) {
			v.fail("Invalid 'tools[%d].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.", i)
		}
		if seen[name] {
			v.fail("Invalid 'tools': duplicate function name '%s'.", name)
		}
		seen[name] = true
		if p, ok := fn["parameters"]; ok {
			if _, ok := p.(map[string]any); !ok {
				v.fail("Invalid type for 'tools[%d].function.parameters': expected an object.", i)
			}
		}
	}
}

func (v *validator) messages(msgs any) {
	list, ok := msgs.([]any)
	if !ok {
		v.fail("Missing required parameter: 'messages'.")
		return
	}
	if len(list) == 0 {
		v.fail("Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.")
		return
	}
	// pending holds the tool_call ids of the last assistant message not answered yet.
	var pending []string
	unanswered := func() {
		if len(pending) > 0 {
			v.fail("An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: %s", strings.Join(pending, ", "))
			pending = nil
		}
	}
	for i, m := range list {
		msg, ok := m.(map[string]any)
		if !ok {
			v.fail("Invalid type for 'messages[%d]': expected an object.", i)
			continue
		}
		role, _ := msg["role"].(string)
		switch role {
		case "system", "developer":
			unanswered()
			v.textContent(i, msg["content"], false)
		case "user":
			unanswered()
			v.userContent(i, msg["content"])
		case "assistant":
			unanswered()
			calls := v.toolCalls(i, msg["tool_calls"])
			if c, has := msg["content"]; (!has || c == nil) && len(calls) == 0 {
				v.fail("Invalid value for 'messages[%d].content': expected a string, got null.", i)
			} else if has && c != nil {
				v.textContent(i, c, true)
			}
			pending = calls
		case "tool":
			id, _ := msg["tool_call_id"].(string)
			if id == "" {
				v.fail("Missing required parameter: 'messages[%d].tool_call_id'.", i)
				continue
			}
			k := indexOf(pending, id)
			if k < 0 {
				v.fail("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.")
				continue
			}
			pending = append(pending[:k:k], pending[k+1:]...)
			v.textContent(i, msg["content"], false)
		default:
			v.fail("Invalid value: '%s'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.", role)
		}
	}
	unanswered()
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

// toolCalls checks an assistant message's tool_calls and returns their ids.
func (v *validator) toolCalls(i int, calls any) []string {
	if calls == nil {
		return nil
	}
	list, ok := calls.([]any)
	if !ok {
		v.fail("Invalid type for 'messages[%d].tool_calls': expected an array.", i)
		return nil
	}
	var ids []string
	for j, c := range list {
		call, ok := c.(map[string]any)
		if !ok {
			v.fail("Invalid type for 'messages[%d].tool_calls[%d]': expected an object.", i, j)
			continue
		}
		id, _ := call["id"].(string)
		if id == "" {
			v.fail("Missing required parameter: 'messages[%d].tool_calls[%d].id'.", i, j)
		}
		if call["type"] != "function" {
			v.fail("Invalid value for 'messages[%d].tool_calls[%d].type': expected 'function'.", i, j)
		}
		fn, _ := call["function"].(map[string]any)
		if name, _ := fn["name"].(string); name == "" {
			v.fail("Missing required parameter: 'messages[%d].tool_calls[%d].function.name'.", i, j)
		}
		if _, ok := fn["arguments"].(string); !ok {
			v.fail("Missing required parameter: 'messages[%d].tool_calls[%d].function.arguments'.", i, j)
		}
		if indexOf(ids, id) >= 0 {
			v.fail("Invalid 'messages[%d].tool_calls': duplicate id '%s'.", i, id)
		}
		ids = append(ids, id)
	}
	return ids
}

// textContent checks a content that may be a string or an array of text parts.
func (v *validator) textContent(i int, c any, nullable bool) {
	switch c := c.(type) {
	case string:
	case nil:
		if !nullable {
			v.fail("Invalid value for 'messages[%d].content': expected a string, got null.", i)
		}
	case []any:
		for j, p := range c {
			part, _ := p.(map[string]any)
			if part["type"] != "text" {
				v.fail("Invalid value for 'messages[%d].content[%d].type': expected 'text'.", i, j)
				continue
			}
			if _, ok := part["text"].(string); !ok {
				v.fail("Missing required parameter: 'messages[%d].content[%d].text'.", i, j)
			}
		}
	default:
		v.fail("Invalid type for 'messages[%d].content': expected a string or an array of content parts.", i)
	}
}

// userContent checks a user message's content: a string or text and image parts.
func (v *validator) userContent(i int, c any) {
	list, ok := c.([]any)
	if !ok {
		v.textContent(i, c, false)
		return
	}
	if len(list) == 0 {
		v.fail("Invalid 'messages[%d].content': empty array. Expected an array with minimum length 1, but got an empty array instead.", i)
	}
	for j, p := range list {
		part, _ := p.(map[string]any)
		switch part["type"] {
		case "text":
			if _, ok := part["text"].(string); !ok {
				v.fail("Missing required parameter: 'messages[%d].content[%d].text'.", i, j)
			}
		case "image_url":
			img, _ := part["image_url"].(map[string]any)
			url, _ := img["url"].(string)
			if !validImageURL(url) {
				v.fail("Invalid 'messages[%d].content[%d].image_url.url'. Expected a valid URL or a base64-encoded data URL with an image MIME type (e.g. 'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU=').", i, j)
			}
		default:
			v.fail("Invalid value for 'messages[%d].content[%d].type': expected one of 'text', 'image_url', 'input_audio', 'file'.", i, j)
		}
	}
}

func validImageURL(u string) bool {
	if strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://") {
		return true
	}
	rest, ok := strings.CutPrefix(u, "data:image/")
	if !ok {
		return false
	}
	_, data, ok := strings.Cut(rest, ";base64,")
	if !ok || data == "" {
		return false
	}
	_, err := base64.StdEncoding.DecodeString(data)
	return err == nil
}
