package openai

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// The chunk types below are the parts of a chat.completion.chunk the assembler reads.
// They are decoded with encoding/json into these few fields rather than the official
// SDK's full types, whose lenient decoder cost about five times as much per chunk, and
// a stream has thousands of chunks. Leniency is kept where compatible servers differ: every scalar is a
// [flexString] or [flexInt], which accept what a server sends instead of failing the
// whole chunk on a type it did not expect.

type wireChunk struct {
	Model   flexString      `json:"model"`
	Choices []wireChoice    `json:"choices"`
	Usage   *wireUsage      `json:"usage"`
	Error   json.RawMessage `json:"error"`
}

type wireChoice struct {
	Index        flexInt    `json:"index"`
	Delta        wireDelta  `json:"delta"`
	FinishReason flexString `json:"finish_reason"`
}

type wireDelta struct {
	Content          flexString     `json:"content"`
	Refusal          flexString     `json:"refusal"`
	ReasoningContent flexString     `json:"reasoning_content"`
	Reasoning        flexString     `json:"reasoning"`
	ToolCalls        []wireToolCall `json:"tool_calls"`
	FunctionCall     wireFunction   `json:"function_call"`
}

type wireToolCall struct {
	Index    flexInt      `json:"index"`
	ID       flexString   `json:"id"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name      flexString `json:"name"`
	Arguments flexString `json:"arguments"`
}

type wireUsage struct {
	PromptTokens        flexInt `json:"prompt_tokens"`
	CompletionTokens    flexInt `json:"completion_tokens"`
	PromptTokensDetails struct {
		CachedTokens     flexInt `json:"cached_tokens"`
		CacheWriteTokens flexInt `json:"cache_write_tokens"`
	} `json:"prompt_tokens_details"`
}

// flexString is a JSON string; null reads as "", an array of content parts as the
// concatenation of their text, and any other value as its JSON text (a server that
// sends tool arguments as an object rather than a string, say).
type flexString string

func (s *flexString) UnmarshalJSON(b []byte) error {
	switch {
	case len(b) == 0 || string(b) == "null":
		*s = ""
	case b[0] == '"':
		// encoding/json has validated the document, so a string without escapes is
		// exactly the bytes between the quotes.
		if bytes.IndexByte(b, '\\') < 0 {
			*s = flexString(b[1 : len(b)-1])
			return nil
		}
		var v string
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		*s = flexString(v)
	case b[0] == '[':
		var parts []struct {
			Type string     `json:"type"`
			Text flexString `json:"text"`
		}
		if json.Unmarshal(b, &parts) == nil {
			var t strings.Builder
			for _, p := range parts {
				if p.Type == "text" || p.Type == "" {
					t.WriteString(string(p.Text))
				}
			}
			*s = flexString(t.String())
			return nil
		}
		*s = flexString(b)
	default:
		*s = flexString(b)
	}
	return nil
}

// flexInt is a JSON integer that remembers whether it was present; a numeric string
// counts, anything else reads as absent.
type flexInt struct {
	V  int64
	OK bool
}

func (n *flexInt) UnmarshalJSON(b []byte) error {
	s := string(b)
	if len(s) > 1 && s[0] == '"' {
		s = s[1 : len(s)-1]
	}
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		*n = flexInt{V: v, OK: true}
	} else if f, err := strconv.ParseFloat(s, 64); err == nil {
		*n = flexInt{V: int64(f), OK: true}
	} else {
		*n = flexInt{}
	}
	return nil
}
