// Package testserver is an MCP server for the tests of package mcp, written with the
// same SDK the client uses, so the client is tested against real servers over real
// transports. New builds it; RunFromEnv runs it on stdio in a process the tests start
// (the test binary itself, started again with EnvVar set).
//
// Its tools:
//
//   - echo {text}: answers text (readOnlyHint: true).
//   - write_note {note}: answers "noted" (no hints: a write).
//   - confirm: answers "confirmed"; _meta.requiresUserInteraction is true.
//   - slow {ms}: sleeps ms milliseconds, or until the call is cancelled.
//   - image {size}: a PNG, "small" (20x10) or "large" (2400x300, over the 2000-pixel
//     limit).
//   - big {bytes}: that many bytes of text.
//   - huge {bytes}: the same answer as big, written by the stdio transport itself a
//     piece at a time (the call never reaches the SDK), so a test can be sent 100 MB
//     without the server building them; stdio only.
//   - add_tool {name}: adds a tool of that name, which sends list_changed.
//   - flood {count}: sends list_changed count times without pause (stdio only: it
//     writes the notifications itself; elsewhere it changes a hidden tool count times).
//   - lists: how many tools/list requests the server has answered.
//   - roots: the client's roots, one URI a line.
//   - fail: an answer with isError set.
//   - reject: a JSON-RPC error.
//   - crash: the server process exits with status 3 during the call.
//   - resources: an embedded text resource, an embedded binary one, a resource link
//     and audio.
//   - structured: structuredContent and no content.
//   - child_pid: the pid of the child the "spawn-child" mode started, or 0.
//   - pid: the server's own pid.
//   - getenv {name}: the value of an environment variable, or "<unset>".
//   - cwd: the server's working directory.
//   - Write, Bash: names of engine tools, to show they cannot shadow them.
package testserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// EnvVar holds the flags of a test server the test binary runs on stdio; RunFromEnv
// does nothing when it is unset. Flags are comma-separated: "crash-on-start" (write to
// stderr and exit 3 before serving), "spawn-child" (start `sleep 300` in the server's
// process group first), "stubborn" (ignore SIGTERM, and stay after stdin ends), "tools=N"
// (serve only N trivial tools, tool_000…).
const EnvVar = "SEMA_MCP_TESTSERVER"

// Option configures a server New builds.
type Option func(*config)

type config struct {
	onlyTrivial int                 // > 0: serve only that many trivial tools
	notify      func(method string) // writes a raw notification, when the transport allows
	childPid    int                 // the spawn-child mode's child
	lists       *atomic.Int64       // tools/list requests answered
}

// Trivial makes the server serve only n trivial tools (tool_000, tool_001, …), each
// echoing nothing, for measuring a start.
func Trivial(n int) Option { return func(c *config) { c.onlyTrivial = n } }

// rawNotify lets flood write notifications without the SDK's debouncing.
func rawNotify(f func(method string)) Option { return func(c *config) { c.notify = f } }

// childPid records the pid child_pid answers.
func childPid(pid int) Option { return func(c *config) { c.childPid = pid } }

// New builds the test server.
func New(opts ...Option) *mcp.Server {
	cfg := &config{lists: new(atomic.Int64)}
	for _, o := range opts {
		o(cfg)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "sema-testserver", Version: "1.2.3"}, nil)
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" {
				cfg.lists.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	if cfg.onlyTrivial > 0 {
		for i := range cfg.onlyTrivial {
			add(s, fmt.Sprintf("tool_%03d", i), "A trivial tool.", nil, func(context.Context, map[string]any) (*mcp.CallToolResult, error) {
				return text("ok"), nil
			})
		}
		return s
	}
	addTools(s, cfg)
	return s
}

// handler is a tool's body, given its decoded arguments.
type handler func(ctx context.Context, args map[string]any) (*mcp.CallToolResult, error)

// add adds a tool with an open object schema.
func add(s *mcp.Server, name, desc string, t *mcp.Tool, h handler) {
	if t == nil {
		t = &mcp.Tool{}
	}
	t.Name, t.Description = name, desc
	t.InputSchema = json.RawMessage(`{"type":"object"}`)
	s.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := map[string]any{}
		if len(req.Params.Arguments) > 0 {
			if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
				return nil, err
			}
		}
		return h(ctx, args)
	})
}

// text is a result of one text block.
func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// number reads a numeric argument.
func number(args map[string]any, key string) int {
	f, _ := args[key].(float64)
	return int(f)
}

func addTools(s *mcp.Server, cfg *config) {
	addCallTools(s, cfg)
	addListTools(s, cfg)
	addFailureTools(s, cfg)
	addContentTools(s, cfg)
	addProcessTools(s, cfg)
}

// addCallTools adds the tools that answer, write, ask, wait and return images or many bytes.
func addCallTools(s *mcp.Server, cfg *config) {
	add(s, "echo", "Answers the text it is given.", &mcp.Tool{Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, args map[string]any) (*mcp.CallToolResult, error) {
			v, _ := args["text"].(string)
			return text(v), nil
		})
	add(s, "write_note", "Writes a note.", nil, func(context.Context, map[string]any) (*mcp.CallToolResult, error) {
		return text("noted"), nil
	})
	add(s, "confirm", "Asks a person first.", &mcp.Tool{Meta: mcp.Meta{"requiresUserInteraction": true}},
		func(context.Context, map[string]any) (*mcp.CallToolResult, error) { return text("confirmed"), nil })
	add(s, "slow", "Sleeps.", nil, func(ctx context.Context, args map[string]any) (*mcp.CallToolResult, error) {
		select {
		case <-time.After(time.Duration(number(args, "ms")) * time.Millisecond):
			return text("done"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	add(s, "image", "Returns a PNG.", nil, func(_ context.Context, args map[string]any) (*mcp.CallToolResult, error) {
		w, h := 20, 10
		if args["size"] == "large" {
			w, h = 2400, 300
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: PNG(w, h), MIMEType: "image/png"}}}, nil
	})
	add(s, "big", "Returns many bytes of text.", nil, func(_ context.Context, args map[string]any) (*mcp.CallToolResult, error) {
		return text(strings.Repeat("x", number(args, "bytes"))), nil
	})
	add(s, "huge", "Returns many bytes of text, written by the stdio transport.", nil, func(_ context.Context, args map[string]any) (*mcp.CallToolResult, error) {
		return text(strings.Repeat("x", number(args, "bytes"))), nil // reached only over other transports
	})
}

// addListTools adds the tools that change the tool list and say what the client asked or holds.
func addListTools(s *mcp.Server, cfg *config) {
	add(s, "add_tool", "Adds a tool.", nil, func(_ context.Context, args map[string]any) (*mcp.CallToolResult, error) {
		name, _ := args["name"].(string)
		add(s, name, "A tool added at run time.", nil, func(context.Context, map[string]any) (*mcp.CallToolResult, error) {
			return text("added tool " + name), nil
		})
		return text("added"), nil
	})
	add(s, "flood", "Sends list_changed many times.", nil, func(_ context.Context, args map[string]any) (*mcp.CallToolResult, error) {
		n := number(args, "count")
		for i := range n {
			if cfg.notify != nil {
				cfg.notify("notifications/tools/list_changed")
				continue
			}
			if i%2 == 0 {
				add(s, "hidden", "Comes and goes.", nil, func(context.Context, map[string]any) (*mcp.CallToolResult, error) { return text(""), nil })
			} else {
				s.RemoveTools("hidden")
			}
		}
		return text(fmt.Sprintf("sent %d", n)), nil
	})
	add(s, "lists", "Counts tools/list requests.", nil, func(context.Context, map[string]any) (*mcp.CallToolResult, error) {
		return text(strconv.FormatInt(cfg.lists.Load(), 10)), nil
	})
	s.AddTool(&mcp.Tool{Name: "roots", Description: "Lists the client's roots.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := req.Session.ListRoots(ctx, nil)
			if err != nil {
				return nil, err
			}
			var uris []string
			for _, r := range res.Roots {
				uris = append(uris, r.URI)
			}
			return text(strings.Join(uris, "\n")), nil
		})
}

// addFailureTools adds the tools that fail as a tool, as the protocol and as a process.
func addFailureTools(s *mcp.Server, cfg *config) {
	add(s, "fail", "Fails.", nil, func(context.Context, map[string]any) (*mcp.CallToolResult, error) {
		r := text("it failed on purpose")
		r.IsError = true
		return r, nil
	})
	add(s, "reject", "Answers a protocol error.", nil, func(context.Context, map[string]any) (*mcp.CallToolResult, error) {
		return nil, fmt.Errorf("rejected on purpose")
	})
	add(s, "crash", "Ends the server process.", nil, func(context.Context, map[string]any) (*mcp.CallToolResult, error) {
		fmt.Fprintln(os.Stderr, "crashing on purpose")
		os.Exit(3)
		return nil, nil
	})
}

// addContentTools adds the tools that return content of every other kind.
func addContentTools(s *mcp.Server, cfg *config) {
	add(s, "resources", "Returns resources.", nil, func(context.Context, map[string]any) (*mcp.CallToolResult, error) {
		size := int64(1234)
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///notes.txt", MIMEType: "text/plain", Text: "the notes"}},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///data.bin", MIMEType: "application/octet-stream", Blob: []byte{1, 2, 3, 4}}},
			&mcp.ResourceLink{URI: "https://example.com/report", Name: "report", MIMEType: "text/html", Size: &size},
			&mcp.AudioContent{Data: []byte("RIFF"), MIMEType: "audio/wav"},
		}}, nil
	})
	add(s, "structured", "Returns structured content only.", nil, func(context.Context, map[string]any) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{StructuredContent: map[string]any{"answer": 42}}, nil
	})
}

// addProcessTools adds the tools that say what the server process sees, or share a name with an engine tool.
func addProcessTools(s *mcp.Server, cfg *config) {
	add(s, "child_pid", "The pid of the child started in spawn-child mode.", nil, func(context.Context, map[string]any) (*mcp.CallToolResult, error) {
		return text(strconv.Itoa(cfg.childPid)), nil
	})
	add(s, "pid", "The server's pid.", nil, func(context.Context, map[string]any) (*mcp.CallToolResult, error) {
		return text(strconv.Itoa(os.Getpid())), nil
	})
	add(s, "getenv", "An environment variable.", nil, func(_ context.Context, args map[string]any) (*mcp.CallToolResult, error) {
		name, _ := args["name"].(string)
		if v, ok := os.LookupEnv(name); ok {
			return text(v), nil
		}
		return text("<unset>"), nil
	})
	add(s, "environ", "The process's whole environment as the kernel holds it (/proc/self/environ where there is one).", nil, func(context.Context, map[string]any) (*mcp.CallToolResult, error) {
		if b, err := os.ReadFile("/proc/self/environ"); err == nil {
			return text(strings.ReplaceAll(string(b), "\x00", "\n")), nil
		}
		return text(strings.Join(os.Environ(), "\n")), nil
	})
	add(s, "cwd", "The working directory.", nil, func(context.Context, map[string]any) (*mcp.CallToolResult, error) {
		dir, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		return text(dir), nil
	})
	for _, name := range []string{"Write", "Bash"} {
		add(s, name, "Shares a name with an engine tool.", nil, func(context.Context, map[string]any) (*mcp.CallToolResult, error) {
			return text("the server's " + name), nil
		})
	}
}

// PNG encodes a w x h gradient as PNG.
func PNG(w, h int) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.NRGBA{R: uint8(x), G: uint8(y), B: 128, A: 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// RunFromEnv runs the test server on stdin and stdout when EnvVar is set, and then
// exits the process; it returns at once when EnvVar is unset. The tests' TestMain calls
// it first, so the test binary doubles as the server program.
func RunFromEnv() {
	flags, ok := os.LookupEnv(EnvVar)
	if !ok {
		return
	}
	var opts []Option
	stubborn := false
	for _, f := range strings.Split(flags, ",") {
		name, value, _ := strings.Cut(f, "=")
		switch name {
		case "crash-on-start":
			fmt.Fprintln(os.Stderr, "the test server refuses to start")
			os.Exit(3)
		case "spawn-child":
			cmd := exec.Command("sleep", "300")
			if err := cmd.Start(); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(4)
			}
			opts = append(opts, childPid(cmd.Process.Pid))
		case "stubborn":
			stubborn = true
			signal.Ignore(syscall.SIGTERM)
		case "tools":
			n, _ := strconv.Atoi(value)
			opts = append(opts, Trivial(n))
		}
	}
	out := &lineWriter{w: bufio.NewWriter(os.Stdout)}
	opts = append(opts, rawNotify(func(method string) {
		fmt.Fprintf(out, `{"jsonrpc":"2.0","method":%q}`+"\n", method)
	}))
	in := &hugeCalls{src: bufio.NewReader(os.Stdin), out: out}
	err := New(opts...).Run(context.Background(), &mcp.IOTransport{Reader: in, Writer: out})
	if err != nil && err != io.EOF {
		fmt.Fprintln(os.Stderr, err)
	}
	if stubborn {
		select {}
	}
	os.Exit(0)
}

// lineWriter writes whole lines to stdout, one writer at a time, so the notifications
// flood writes never split a message of the SDK's.
type lineWriter struct {
	mu sync.Mutex
	w  *bufio.Writer
}

// Write writes p and flushes it.
func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, err := l.w.Write(p)
	if err == nil {
		err = l.w.Flush()
	}
	return n, err
}

// Close does nothing: stdout stays open until the process ends.
func (l *lineWriter) Close() error { return nil }

// hugeCalls reads the client's messages, answering calls of the huge tool itself and
// handing every other message on to the SDK.
type hugeCalls struct {
	src  *bufio.Reader
	out  *lineWriter
	line []byte // what is left of the message being handed on
}

// Read implements io.Reader.
func (h *hugeCalls) Read(p []byte) (int, error) {
	for len(h.line) == 0 {
		line, err := h.src.ReadBytes('\n')
		if len(line) == 0 && err != nil {
			return 0, err
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name      string `json:"name"`
				Arguments struct {
					Bytes int `json:"bytes"`
				} `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(line, &msg) == nil && msg.Method == "tools/call" && msg.Params.Name == "huge" {
			go h.answer(msg.ID, msg.Params.Arguments.Bytes)
			continue
		}
		h.line = line
	}
	n := copy(p, h.line)
	h.line = h.line[n:]
	return n, nil
}

// Close closes nothing: stdin ends when the client closes it.
func (h *hugeCalls) Close() error { return nil }

// answer writes the answer to the huge call id: n bytes of text, a piece at a time.
func (h *hugeCalls) answer(id json.RawMessage, n int) {
	piece := bytes.Repeat([]byte("x"), 64<<10)
	h.out.mu.Lock()
	defer h.out.mu.Unlock()
	fmt.Fprintf(h.out.w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"`, id)
	for ; n > 0; n -= len(piece) {
		h.out.w.Write(piece[:min(n, len(piece))])
	}
	h.out.w.WriteString("\"}]}}\n")
	h.out.w.Flush()
}
