package anthropictest

import (
	"encoding/base64"
	"fmt"
	"regexp"
	"strings"
)

// toolName is the pattern the API requires of tool names.
var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,128}$`)

// maxCacheBreakpoints is how many blocks may carry cache_control in one request.
const maxCacheBreakpoints = 4

// imageTypes are the media types the API accepts for base64 images.
var imageTypes = map[string]bool{"image/jpeg": true, "image/png": true, "image/gif": true, "image/webp": true}

// validate checks body the way the API does where that is cheap, and returns the
// message of the 400 invalid_request_error the API would send, or "" when the request
// is acceptable.
func validate(body map[string]any) string {
	v := &validator{}
	v.request(body)
	return v.msg
}

type validator struct {
	msg         string
	breakpoints int
}

// fail records the first problem only, as the API reports one at a time.
func (v *validator) fail(format string, args ...any) {
	if v.msg == "" {
		v.msg = fmt.Sprintf(format, args...)
	}
}

func (v *validator) cacheControl(where string, block map[string]any) {
	cc, ok := block["cache_control"]
	if !ok || cc == nil {
		return
	}
	m, ok := cc.(map[string]any)
	if !ok || m["type"] != "ephemeral" {
		v.fail("%s.cache_control: Input should be a valid cache control object with type 'ephemeral'", where)
		return
	}
	v.breakpoints++
}

func (v *validator) request(body map[string]any) {
	if m, ok := body["model"].(string); !ok || m == "" {
		v.fail("model: Field required")
	}
	switch mt := body["max_tokens"].(type) {
	case float64:
		if mt < 1 || mt != float64(int64(mt)) {
			v.fail("max_tokens: Input should be an integer greater than or equal to 1")
		}
	default:
		v.fail("max_tokens: Field required")
	}
	if s, ok := body["stream"]; ok {
		if _, ok := s.(bool); !ok {
			v.fail("stream: Input should be a valid boolean")
		}
	}
	v.system(body["system"])
	v.tools(body["tools"])
	v.messages(body["messages"])
	if v.breakpoints > maxCacheBreakpoints {
		v.fail("A maximum of %d blocks with cache_control may be provided. Found %d.", maxCacheBreakpoints, v.breakpoints)
	}
}

func (v *validator) system(sys any) {
	switch s := sys.(type) {
	case nil, string:
	case []any:
		for i, b := range s {
			block, ok := b.(map[string]any)
			if !ok || block["type"] != "text" {
				v.fail("system.%d: Input should be a text block", i)
				continue
			}
			if t, _ := block["text"].(string); t == "" {
				v.fail("system.%d.text: text content blocks must be non-empty", i)
			}
			v.cacheControl(fmt.Sprintf("system.%d", i), block)
		}
	default:
		v.fail("system: Input should be a valid string or list of text blocks")
	}
}

func (v *validator) tools(tools any) {
	if tools == nil {
		return
	}
	list, ok := tools.([]any)
	if !ok {
		v.fail("tools: Input should be a valid list")
		return
	}
	seen := map[string]bool{}
	for i, t := range list {
		tool, ok := t.(map[string]any)
		if !ok {
			v.fail("tools.%d: Input should be a valid dictionary", i)
			continue
		}
		name, _ := tool["name"].(string)
		if !toolName.MatchString(name) {
			v.fail("tools.%d.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'", i)
		}
		if seen[name] {
			v.fail("tools: Tool names must be unique.")
		}
		seen[name] = true
		if _, custom := tool["type"]; !custom || tool["type"] == "custom" {
			schema, ok := tool["input_schema"].(map[string]any)
			if !ok {
				v.fail("tools.%d.input_schema: Field required", i)
			} else if schema["type"] != "object" {
				v.fail("tools.%d.input_schema.type: Input should be 'object'", i)
			}
		}
		v.cacheControl(fmt.Sprintf("tools.%d", i), tool)
	}
}

func (v *validator) messages(msgs any) {
	list, ok := msgs.([]any)
	if !ok || len(list) == 0 {
		v.fail("messages: at least one message is required")
		return
	}
	var prevRole string
	var pending []string // tool_use ids of the previous assistant message
	for i, m := range list {
		msg, ok := m.(map[string]any)
		if !ok {
			v.fail("messages.%d: Input should be a valid dictionary", i)
			return
		}
		role, _ := msg["role"].(string)
		if role != "user" && role != "assistant" {
			v.fail("messages.%d.role: Input should be 'user' or 'assistant'", i)
			return
		}
		if i == 0 && role != "user" {
			v.fail("messages: first message must use the \"user\" role")
		}
		if role == prevRole {
			v.fail("messages: roles must alternate between \"user\" and \"assistant\", but found multiple %q roles in a row", role)
		}
		blocks := v.content(i, role, msg["content"], i == len(list)-1)

		var uses, results []string
		other := false
		for _, b := range blocks {
			switch b["type"] {
			case "tool_use":
				id, _ := b["id"].(string)
				uses = append(uses, id)
			case "tool_result":
				id, _ := b["tool_use_id"].(string)
				results = append(results, id)
				if other {
					v.fail("messages.%d.content: tool_result blocks must come first in the content array, before any other block", i)
				}
			default:
				other = true
			}
		}
		if len(pending) > 0 {
			var missing []string
			for _, id := range pending {
				if !contains(results, id) {
					missing = append(missing, id)
				}
			}
			if len(missing) > 0 {
				v.fail("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i-1, strings.Join(missing, ", "))
			}
		}
		for _, id := range results {
			if !contains(pending, id) {
				v.fail("messages.%d.content: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, id)
			}
		}
		pending = uses
		prevRole = role
	}
	if len(pending) > 0 {
		v.fail("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", len(list)-1, strings.Join(pending, ", "))
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// content checks the content of message i and returns its blocks.
func (v *validator) content(i int, role string, content any, last bool) []map[string]any {
	where := fmt.Sprintf("messages.%d.content", i)
	switch c := content.(type) {
	case string:
		if c == "" && !(last && role == "assistant") {
			v.fail("messages.%d: all messages must have non-empty content except for the optional final assistant message", i)
		}
		return nil
	case []any:
		if len(c) == 0 && !(last && role == "assistant") {
			v.fail("messages.%d: all messages must have non-empty content except for the optional final assistant message", i)
		}
		blocks := make([]map[string]any, 0, len(c))
		for j, b := range c {
			block, ok := b.(map[string]any)
			if !ok {
				v.fail("%s.%d: Input should be a valid dictionary", where, j)
				continue
			}
			v.block(fmt.Sprintf("%s.%d", where, j), role, block)
			blocks = append(blocks, block)
		}
		return blocks
	default:
		v.fail("%s: Input should be a valid string or list of content blocks", where)
		return nil
	}
}

func (v *validator) block(where, role string, b map[string]any) {
	typ, _ := b["type"].(string)
	switch typ {
	case "text":
		if t, _ := b["text"].(string); t == "" {
			v.fail("%s.text: text content blocks must be non-empty", where)
		}
	case "image":
		v.image(where, b)
	case "tool_use":
		if role != "assistant" {
			v.fail("%s: tool_use blocks may only appear in assistant messages", where)
		}
		if id, _ := b["id"].(string); id == "" {
			v.fail("%s.id: Field required", where)
		}
		if name, _ := b["name"].(string); name == "" {
			v.fail("%s.name: Field required", where)
		}
		if _, ok := b["input"].(map[string]any); !ok {
			v.fail("%s.input: Input should be a valid dictionary", where)
		}
	case "tool_result":
		if role != "user" {
			v.fail("%s: tool_result blocks may only appear in user messages", where)
		}
		if id, _ := b["tool_use_id"].(string); id == "" {
			v.fail("%s.tool_use_id: Field required", where)
		}
		if e, ok := b["is_error"]; ok {
			if _, ok := e.(bool); !ok {
				v.fail("%s.is_error: Input should be a valid boolean", where)
			}
		}
		switch c := b["content"].(type) {
		case nil, string:
		case []any:
			for k, x := range c {
				inner, ok := x.(map[string]any)
				if !ok {
					v.fail("%s.content.%d: Input should be a valid dictionary", where, k)
					continue
				}
				w := fmt.Sprintf("%s.content.%d", where, k)
				switch inner["type"] {
				case "text":
					if t, _ := inner["text"].(string); t == "" {
						v.fail("%s.text: text content blocks must be non-empty", w)
					}
				case "image":
					v.image(w, inner)
				default:
					v.fail("%s.type: Input tag %v found using 'type' does not match any of the expected tags: 'text', 'image'", w, inner["type"])
				}
				v.cacheControl(w, inner)
			}
		default:
			v.fail("%s.content: Input should be a valid string or list of blocks", where)
		}
	case "thinking":
		if role != "assistant" {
			v.fail("%s: thinking blocks may only appear in assistant messages", where)
		}
		if s, _ := b["signature"].(string); s == "" {
			v.fail("%s.signature: Field required", where)
		}
		if _, ok := b["thinking"].(string); !ok {
			v.fail("%s.thinking: Field required", where)
		}
		if _, ok := b["cache_control"]; ok {
			v.fail("%s.cache_control: Extra inputs are not permitted", where)
		}
		return
	case "redacted_thinking":
		if d, _ := b["data"].(string); d == "" {
			v.fail("%s.data: Field required", where)
		}
		return
	default:
		v.fail("%s.type: Input tag '%s' found using 'type' does not match any of the expected tags", where, typ)
	}
	v.cacheControl(where, b)
}

func (v *validator) image(where string, b map[string]any) {
	src, ok := b["source"].(map[string]any)
	if !ok {
		v.fail("%s.source: Field required", where)
		return
	}
	if src["type"] != "base64" {
		// url and file sources are not checked further.
		return
	}
	mt, _ := src["media_type"].(string)
	if !imageTypes[mt] {
		v.fail("%s.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'", where)
	}
	data, _ := src["data"].(string)
	if _, err := base64.StdEncoding.DecodeString(data); err != nil || data == "" {
		v.fail("%s.source.base64.data: The image data is not valid base64.", where)
	}
}
