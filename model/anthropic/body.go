package anthropic

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"hash/maphash"
	"math/bits"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/model"
)

// The request body is encoded here rather than by the SDK. A conversation is resent
// whole every turn, and the SDK's reflective encoder spent more time on the old
// messages than everything else the engine does in a turn, growing with the
// transcript. A message does not change once it has been sent, so its encoding is
// kept (bodyCache) and a turn encodes only what is new: the last message, and the
// cache breakpoint it carries. The SDK still sends the request: headers, auth,
// retries and error statuses are its own.
//
// The body says what buildParams's SDK parameters would say (the tests hold the two
// to the same JSON), in this order: model, max_tokens, stream, system, tools,
// messages (model only when there is one). Two kinds of blocks are left out because the API refuses them and they
// carry nothing it could use: empty text blocks, and thinking blocks without a
// signature.

// cacheBreakpoint is the JSON the API reads as an ephemeral prompt-cache breakpoint.
const cacheBreakpoint = `"cache_control":{"type":"ephemeral"}`

// bodyCacheBytes bounds one generation of bodyCache; the cache holds at most two.
const bodyCacheBytes = 32 << 20

// bodyCache keeps the encoding of messages and of the system-and-tools preamble,
// keyed by a hash of their content, so that equal content is encoded once however
// many requests (and tasks) send it. It holds two generations: an entry found in
// the old one moves to the new one, and when the new one outgrows bodyCacheBytes it
// becomes the old one, so what a live conversation keeps sending stays and the rest
// is dropped. Its methods are safe for concurrent use.
type bodyCache struct {
	seed maphash.Seed

	mu       sync.Mutex
	cur, old map[bodyKey][]byte
	curBytes int
}

// bodyKey names an encoding by its content's hash and length: equal keys are equal
// content, the chance of two contents sharing a 64-bit hash under a seed chosen at
// random by this process set aside.
type bodyKey struct {
	hash uint64
	n    int
}

func newBodyCache() *bodyCache {
	return &bodyCache{seed: maphash.MakeSeed(), cur: map[bodyKey][]byte{}}
}

func (c *bodyCache) get(k bodyKey) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if b, ok := c.cur[k]; ok {
		return b, true
	}
	b, ok := c.old[k]
	if ok {
		c.putLocked(k, b)
	}
	return b, ok
}

func (c *bodyCache) put(k bodyKey, b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(k, b)
}

func (c *bodyCache) putLocked(k bodyKey, b []byte) {
	if _, ok := c.cur[k]; ok {
		return
	}
	if c.curBytes+len(b) > bodyCacheBytes && len(c.cur) > 0 {
		c.old, c.cur, c.curBytes = c.cur, map[bodyKey][]byte{}, 0
	}
	c.cur[k] = b
	c.curBytes += len(b)
}

// encodeBody returns the JSON body of req, with "stream":true. It refuses, with code
// model.bad_request, what it cannot express: an unknown role or block kind, tool input
// or a tool schema that is not JSON, a negative MaxTokens.
func (c *bodyCache) encodeBody(req *model.Request) ([]byte, error) {
	maxTokens := req.MaxTokens
	switch {
	case maxTokens == 0:
		maxTokens = DefaultMaxTokens
	case maxTokens < 0:
		return nil, sema.Errorf(model.CodeBadRequest, "the request's MaxTokens is %d; use zero for the default or a positive bound", maxTokens)
	}
	preamble, err := c.preamble(req)
	if err != nil {
		return nil, err
	}
	// Every part is encoded or found first, so that the body is allocated once.
	msgs := make([][]byte, len(req.Messages))
	size := 64 + len(req.Model) + len(preamble)
	last := len(req.Messages) - 1
	for i := range req.Messages {
		if i == last {
			// The conversation's end gets a cache breakpoint, so that the next turn
			// reads the whole conversation so far from the cache instead of paying
			// for it again. With the system prompt's and the last tool's, that makes
			// three of the four breakpoints the API allows. It is encoded for this
			// request only: in the next, the message is no longer the end.
			msgs[i], err = appendMessage(nil, i, &req.Messages[i], true)
		} else {
			msgs[i], err = c.message(i, &req.Messages[i])
		}
		if err != nil {
			return nil, err
		}
		size += len(msgs[i]) + 1
	}

	b := make([]byte, 0, size)
	b = append(b, '{')
	if req.Model != "" {
		// An empty name is left out, as the SDK leaves it out; the API refuses both.
		b = append(b, `"model":`...)
		b = appendString(b, req.Model)
		b = append(b, ',')
	}
	b = append(b, `"max_tokens":`...)
	b = strconv.AppendInt(b, int64(maxTokens), 10)
	b = append(b, `,"stream":true`...)
	b = append(b, preamble...)
	b = append(b, `,"messages":[`...)
	for i, m := range msgs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, m...)
	}
	return append(b, "]}"...), nil
}

// preamble is `,"system":[…],"tools":[…]` (each part only when there is one), with
// breakpoints after the system prompt and after the last tool, which stay stable
// across turns.
func (c *bodyCache) preamble(req *model.Request) ([]byte, error) {
	f := fingerprint{seed: c.seed}
	f.str(req.System)
	f.fold(uint64(len(req.Tools)))
	for _, t := range req.Tools {
		f.str(t.Name)
		f.str(t.Description)
		f.bytes(t.InputSchema)
	}
	key := f.key()
	if b, ok := c.get(key); ok {
		return b, nil
	}
	var b []byte
	if req.System != "" {
		b = append(b, `,"system":[{"type":"text","text":`...)
		b = appendString(b, req.System)
		b = append(b, ","+cacheBreakpoint+"}]"...)
	}
	if len(req.Tools) > 0 {
		b = append(b, `,"tools":[`...)
		for i, spec := range req.Tools {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"name":`...)
			b = appendString(b, spec.Name)
			if spec.Description != "" {
				b = append(b, `,"description":`...)
				b = appendString(b, spec.Description)
			}
			b = append(b, `,"input_schema":`...)
			// The schema goes out as the tool wrote it, keywords the SDK does not model
			// ($defs, additionalProperties, …) included.
			schema := bytes.TrimSpace(spec.InputSchema)
			if len(schema) == 0 {
				schema = []byte(`{"type":"object","properties":{}}`)
			}
			var err error
			if b, err = appendCompact(b, schema); err != nil {
				return nil, sema.Errorf(model.CodeBadRequest, "the input schema of tool %q is not valid JSON; fix the tool's spec", spec.Name).With("tool", spec.Name)
			}
			if i == len(req.Tools)-1 {
				b = append(b, ","+cacheBreakpoint...)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	c.put(key, b)
	return b, nil
}

// message returns the encoding of message i, without a breakpoint, from the cache
// when its content was encoded before.
func (c *bodyCache) message(i int, m *model.Message) ([]byte, error) {
	f := fingerprint{seed: c.seed}
	f.str(string(m.Role))
	f.blocks(m.Content)
	key := f.key()
	if b, ok := c.get(key); ok {
		return b, nil
	}
	b, err := appendMessage(nil, i, m, false)
	if err != nil {
		return nil, err
	}
	c.put(key, b)
	return b, nil
}

// fingerprint hashes content field by field: each field is hashed on its own
// (maphash reads a string where it lies, without copying it) and folded in by
// position, so that fields cannot run into each other and order counts.
type fingerprint struct {
	seed maphash.Seed
	h    uint64
	n    int
}

func (f *fingerprint) fold(v uint64) {
	f.h = bits.RotateLeft64(f.h^v, 27)*0x9e3779b97f4a7c15 + 0x632be59bd9b4e019
	f.n++
}

func (f *fingerprint) str(s string) {
	if s == "" {
		f.fold(0)
		return
	}
	f.fold(maphash.String(f.seed, s))
	f.n += len(s)
}

func (f *fingerprint) bytes(b []byte) {
	if len(b) == 0 {
		f.fold(0)
		return
	}
	f.fold(maphash.Bytes(f.seed, b))
	f.n += len(b)
}

func (f *fingerprint) key() bodyKey { return bodyKey{hash: f.h, n: f.n} }

// blocks folds in every field of blocks that reaches the body.
func (f *fingerprint) blocks(blocks []model.Block) {
	f.fold(uint64(len(blocks)))
	for i := range blocks {
		b := &blocks[i]
		flag := uint64(0)
		if b.IsError {
			flag = 1
		}
		f.fold(flag)
		f.str(string(b.Kind))
		f.str(b.Text)
		f.str(b.ID)
		f.str(b.Name)
		f.bytes(b.Input)
		f.str(b.MediaType)
		f.bytes(b.Data)
		f.str(b.Signature)
		f.blocks(b.Content)
	}
}

// appendMessage appends message i; with breakpoint, its last block that can carry a
// cache breakpoint carries one.
func appendMessage(b []byte, i int, m *model.Message, breakpoint bool) ([]byte, error) {
	switch m.Role {
	case model.RoleUser, model.RoleAssistant:
	default:
		return nil, sema.Errorf(model.CodeBadRequest, "message %d has role %q; use %q or %q", i, m.Role, model.RoleUser, model.RoleAssistant).With("message", i)
	}
	marked := -1
	if breakpoint {
		marked = breakpointBlock(m.Content)
	}
	b = append(b, `{"role":"`...)
	b = append(b, m.Role...)
	b = append(b, `","content":[`...)
	first := true
	for j := range m.Content {
		blk := &m.Content[j]
		if (blk.Kind == model.KindText && blk.Text == "") || (blk.Kind == model.KindThinking && blk.Signature == "") {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		var err error
		if b, err = appendBlock(b, i, j, blk, j == marked); err != nil {
			return nil, err
		}
	}
	return append(b, "]}"...), nil
}

// breakpointBlock is the index of the last block that is sent and can carry a
// breakpoint (thinking blocks cannot), or -1.
func breakpointBlock(blocks []model.Block) int {
	for j := len(blocks) - 1; j >= 0; j-- {
		switch blocks[j].Kind {
		case model.KindText:
			if blocks[j].Text != "" {
				return j
			}
		case model.KindImage, model.KindToolUse, model.KindToolResult:
			return j
		}
	}
	return -1
}

func appendBlock(b []byte, i, j int, blk *model.Block, breakpoint bool) ([]byte, error) {
	var err error
	switch blk.Kind {
	case model.KindText:
		b = append(b, `{"type":"text","text":`...)
		b = appendString(b, blk.Text)
	case model.KindImage:
		if b, err = appendImage(b, i, j, blk); err != nil {
			return nil, err
		}
	case model.KindToolUse:
		b = append(b, `{"type":"tool_use","id":`...)
		b = appendString(b, blk.ID)
		b = append(b, `,"name":`...)
		b = appendString(b, blk.Name)
		b = append(b, `,"input":`...)
		input := bytes.TrimSpace(blk.Input)
		if len(input) == 0 || string(input) == "null" {
			input = []byte(`{}`)
		}
		if input[0] == '{' {
			b, err = appendCompact(b, input)
		}
		if input[0] != '{' || err != nil {
			return nil, sema.Errorf(model.CodeBadRequest, "the input of tool call %s in message %d is not a JSON object; send the input the model produced", blk.ID, i).
				With("message", i).With("tool_use_id", blk.ID)
		}
	case model.KindToolResult:
		b = append(b, `{"type":"tool_result","tool_use_id":`...)
		b = appendString(b, blk.ID)
		if blk.IsError {
			b = append(b, `,"is_error":true`...)
		}
		open := false
		for k := range blk.Content {
			c := &blk.Content[k]
			switch c.Kind {
			case model.KindText:
				if c.Text == "" {
					continue
				}
			case model.KindImage:
			default:
				return nil, sema.Errorf(model.CodeBadRequest, "block %d of the result of tool call %s in message %d has kind %q; a tool result holds only text and image blocks", k, blk.ID, i, c.Kind).
					With("message", i).With("tool_use_id", blk.ID)
			}
			if open {
				b = append(b, ',')
			} else {
				b = append(b, `,"content":[`...)
				open = true
			}
			if c.Kind == model.KindText {
				b = append(b, `{"type":"text","text":`...)
				b = appendString(b, c.Text)
				b = append(b, '}')
			} else if b, err = appendImage(b, i, j, c); err != nil {
				return nil, err
			} else {
				b = append(b, '}')
			}
		}
		if open {
			b = append(b, ']')
		}
	case model.KindThinking:
		b = append(b, `{"type":"thinking","thinking":`...)
		b = appendString(b, blk.Text)
		b = append(b, `,"signature":`...)
		b = appendString(b, blk.Signature)
	default:
		return nil, sema.Errorf(model.CodeBadRequest, "block %d of message %d has kind %q, which the Anthropic provider cannot send; use text, image, tool_use, tool_result or thinking", j, i, blk.Kind).
			With("message", i)
	}
	if breakpoint {
		b = append(b, ","+cacheBreakpoint...)
	}
	return append(b, '}'), nil
}

// appendImage appends an image block without its closing brace.
func appendImage(b []byte, i, j int, blk *model.Block) ([]byte, error) {
	if len(blk.Data) == 0 || blk.MediaType == "" {
		return nil, sema.Errorf(model.CodeBadRequest, "the image in block %d of message %d has no data or no media type; attach the image bytes and their media type", j, i).
			With("message", i)
	}
	b = append(b, `{"type":"image","source":{"type":"base64","media_type":`...)
	b = appendString(b, blk.MediaType)
	b = append(b, `,"data":"`...)
	b = base64.StdEncoding.AppendEncode(b, blk.Data)
	return append(b, `"}`...), nil
}

// appendCompact appends the JSON value raw without insignificant space, and fails when
// raw is not one valid JSON value.
func appendCompact(b, raw []byte) ([]byte, error) {
	buf := bytes.NewBuffer(b)
	if err := json.Compact(buf, raw); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// escapes marks the bytes below utf8.RuneSelf that a JSON string cannot hold as they
// are.
var escapes = func() (t [utf8.RuneSelf]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string. Bytes that are not UTF-8 become U+FFFD, as
// encoding/json writes them; runs that need no escaping are copied whole.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if !escapes[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
