package agent_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/sema-agent/sema"
	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/imagefit"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/anthropic"
	"github.com/sema-agent/sema/model/anthropic/anthropictest"
	"github.com/sema-agent/sema/model/openai"
	"github.com/sema-agent/sema/model/openai/openaitest"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/session"
)

// pngOf encodes a w x h PNG whose first pixel is c, so two images differ in their bytes.
func pngOf(t *testing.T, w, h int, c color.Color) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	img.Set(0, 0, c)
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func jpegOf(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, image.NewRGBA(image.Rect(0, 0, 4, 4)), nil); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// The images of a task reach the Anthropic wire after the prompt's text, in its first
// user message, as base64 image sources: a file the engine read and bytes the embedder
// gave.
func TestPromptImagesReachTheWire(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	shot := pngOf(t, 3, 2, color.RGBA{R: 200, A: 255})
	writeFile(t, filepath.Join(root, "shots", "shot.png"), shot)
	given := jpegOf(t)

	srv := anthropictest.NewServer(t, anthropictest.Turn{Text: "a red dot"})
	p, err := anthropic.New(anthropic.Config{APIKey: "sk-ant-test", BaseURL: srv.URL(), HTTPClient: &http.Client{}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := agent.New(agent.Deps{Provider: p}).Run(context.Background(), agent.TaskSpec{
		Prompt: "what is in these?", Root: root, Model: "claude-test",
		Images: []agent.Image{{Path: "shots/shot.png"}, {Data: given, MediaType: "image/jpeg"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != sema.StatusCompleted || res.Result != "a red dot" {
		t.Fatalf("status %s result %q error %v", res.Status, res.Result, res.Error)
	}
	var body struct {
		Messages []struct {
			Role    string `json:"role"`
			Content []struct {
				Type   string `json:"type"`
				Text   string `json:"text"`
				Source struct {
					Type      string `json:"type"`
					MediaType string `json:"media_type"`
					Data      string `json:"data"`
				} `json:"source"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := srv.Requests()[0].Decode(&body); err != nil {
		t.Fatal(err)
	}
	c := body.Messages[0].Content
	if len(c) != 3 || body.Messages[0].Role != "user" || c[0].Type != "text" || c[0].Text != "what is in these?" {
		t.Fatalf("first message %+v", body.Messages[0])
	}
	for i, want := range []struct {
		mt   string
		data []byte
	}{{"image/png", shot}, {"image/jpeg", given}} {
		got := c[i+1]
		if got.Type != "image" || got.Source.Type != "base64" || got.Source.MediaType != want.mt || got.Source.Data != base64.StdEncoding.EncodeToString(want.data) {
			t.Errorf("block %d = %s %s %s, %d base64 bytes; want %s with the image's bytes", i+1, got.Type, got.Source.Type, got.Source.MediaType, len(got.Source.Data), want.mt)
		}
	}
}

// An image the task may not attach refuses the task by name, and nothing reaches the
// model. The deny rule's case is calibrated: the same file without the rule is sent.
func TestPromptImageRefusals(t *testing.T) {
	t.Parallel()
	root, outside := t.TempDir(), t.TempDir()
	shot := pngOf(t, 2, 2, color.Black)
	writeFile(t, filepath.Join(root, "secrets", "shot.png"), shot)
	writeFile(t, filepath.Join(root, "notes.txt"), []byte("plain text, not an image\n"))
	writeFile(t, filepath.Join(root, ".aws", "shot.png"), shot)
	writeFile(t, filepath.Join(outside, "out.png"), shot)
	if err := os.Symlink(filepath.Join(outside, "out.png"), filepath.Join(root, "link.png")); err != nil {
		t.Fatal(err)
	}
	wide := pngOf(t, imagefit.MaxDimension+100, 4, color.White)
	deny := []string{"Read(./secrets/**)"}
	rel, err := filepath.Rel(root, filepath.Join(outside, "out.png"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		images   []agent.Image
		disallow []string
		down     imagefit.Downsampler
		home     string // Deps.Home; "" : a directory of its own
		code     string // "" : the image is sent
	}{
		{"wrong type", []agent.Image{{Data: []byte("%PDF-1.4\n%\xe2\xe3\n1 0 obj")}}, nil, nil, "", agent.CodeImageInvalid},
		{"text file", []agent.Image{{Path: "notes.txt"}}, nil, nil, "", agent.CodeImageInvalid},
		{"media type the bytes contradict", []agent.Image{{Data: shot, MediaType: "image/jpeg"}}, nil, nil, "", agent.CodeImageInvalid},
		{"media type not an image", []agent.Image{{Data: shot, MediaType: "application/pdf"}}, nil, nil, "", agent.CodeImageInvalid},
		{"both path and data", []agent.Image{{Path: "secrets/shot.png", Data: shot}}, nil, nil, "", agent.CodeImageInvalid},
		{"neither", []agent.Image{{MediaType: "image/png"}}, nil, nil, "", agent.CodeImageInvalid},
		{"second of two", []agent.Image{{Data: shot}, {}}, nil, nil, "", agent.CodeImageInvalid},
		{"missing file", []agent.Image{{Path: "nope.png"}}, nil, nil, "", agent.CodeImageUnreadable},
		{"a directory", []agent.Image{{Path: "secrets"}}, nil, nil, "", agent.CodeImageUnreadable},
		{"deny rule", []agent.Image{{Path: "secrets/shot.png"}}, deny, nil, "", "permission.denied"},
		{"deny rule, absolute path", []agent.Image{{Path: filepath.Join(root, "secrets", "shot.png")}}, deny, nil, "", "permission.denied"},
		{"no deny rule", []agent.Image{{Path: "secrets/shot.png"}}, nil, nil, "", ""},
		{"symlink out of the roots", []agent.Image{{Path: "link.png"}}, nil, nil, "", "fs.path_not_in_root"},
		{"dot-dot escape", []agent.Image{{Path: rel}}, nil, nil, "", "fs.path_not_in_root"},
		{"absolute path outside", []agent.Image{{Path: filepath.Join(outside, "out.png")}}, nil, nil, "", "fs.path_not_in_root"},
		{"over the limits, downsampling off", []agent.Image{{Data: wide}}, nil, imagefit.NoDownsample, "", imagefit.CodeTooLarge},
		{"credential store", []agent.Image{{Path: ".aws/shot.png"}}, nil, nil, root, "fs.path_denied"},
		{"not a credential store under another home", []agent.Image{{Path: ".aws/shot.png"}}, nil, nil, "", ""},
		{"over the limits, downsampled", []agent.Image{{Data: wide}}, nil, nil, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "seen"}}})
			home := c.home
			if home == "" {
				home = t.TempDir()
			}
			r := agent.New(agent.Deps{Provider: p, ImageDownsampler: c.down, Home: home})
			res, err := r.Run(context.Background(), agent.TaskSpec{Prompt: "look", Root: root, DisallowedTools: c.disallow, Images: c.images})
			if c.code != "" {
				if res != nil || sema.CodeOf(err) != c.code {
					t.Fatalf("got res=%v err=%v, want code %s", res, err, c.code)
				}
				var se *sema.Error
				if !errors.As(err, &se) || se.Message == "" {
					t.Fatalf("refusal %v has no sentence", err)
				}
				if n := len(p.Requests()); n != 0 {
					t.Fatalf("a refused image reached the model %d times", n)
				}
				return
			}
			if err != nil || res.Status != sema.StatusCompleted {
				t.Fatalf("res=%+v err=%v", res, err)
			}
			msg := p.Requests()[0].Messages[0]
			if len(msg.Content) != 2 || msg.Content[1].Kind != model.KindImage || len(msg.Content[1].Data) == 0 {
				t.Fatalf("first message %+v", msg)
			}
			if img := msg.Content[1]; c.images[0].Path != "" && !bytes.Equal(img.Data, shot) {
				t.Fatalf("sent %d bytes, not the file's %d", len(img.Data), len(shot))
			} else if c.images[0].Data != nil && len(c.images[0].Data) == len(wide) && (img.MediaType != "image/jpeg" || bytes.Equal(img.Data, wide)) {
				t.Fatalf("the wide image was sent as %s, %d bytes; want it downsampled", img.MediaType, len(img.Data))
			}
		})
	}
}

// An image is part of the session's transcript: a resumed leg sends it again, before
// its own prompt, and a resumed leg may carry images of its own.
func TestPromptImagesKeptOnResume(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	first, second := pngOf(t, 2, 2, color.RGBA{G: 255, A: 255}), pngOf(t, 2, 2, color.RGBA{B: 255, A: 255})
	writeFile(t, filepath.Join(root, "a.png"), first)
	p := scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "green"}, {Text: "blue"}}})
	r := agent.New(agent.Deps{Provider: p, Store: session.NewMemory()})
	ctx := context.Background()
	res, err := r.Run(ctx, agent.TaskSpec{Prompt: "colour?", Root: root, Images: []agent.Image{{Path: "a.png"}}})
	if err != nil || res.Status != sema.StatusCompleted {
		t.Fatalf("res=%+v err=%v", res, err)
	}
	// The file changes after the first leg: the transcript holds what was sent.
	writeFile(t, filepath.Join(root, "a.png"), second)
	res, err = r.Run(ctx, agent.TaskSpec{Prompt: "and this one?", Root: root, Resume: &agent.Resume{SessionID: res.SessionID},
		Images: []agent.Image{{Data: second}}})
	if err != nil || res.Status != sema.StatusCompleted {
		t.Fatalf("res=%+v err=%v", res, err)
	}
	msgs := p.Requests()[1].Messages
	if len(msgs) != 3 {
		t.Fatalf("resumed request has %d messages: %+v", len(msgs), msgs)
	}
	imageData := func(m model.Message) [][]byte {
		var out [][]byte
		for _, b := range m.Content {
			if b.Kind == model.KindImage {
				out = append(out, b.Data)
			}
		}
		return out
	}
	if got := imageData(msgs[0]); len(got) != 1 || !bytes.Equal(got[0], first) || msgs[0].Content[0].Text != "colour?" {
		t.Fatalf("the first prompt came back as %+v", msgs[0])
	}
	if got := imageData(msgs[2]); len(got) != 1 || !bytes.Equal(got[0], second) || msgs[2].Content[0].Text != "and this one?" {
		t.Fatalf("the resumed prompt is %+v", msgs[2])
	}
}

// A prompt may be images alone.
func TestPromptOfImagesAlone(t *testing.T) {
	t.Parallel()
	p := scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "a dot"}}})
	res, err := agent.New(agent.Deps{Provider: p}).Run(context.Background(), agent.TaskSpec{Root: t.TempDir(), Images: []agent.Image{{Data: jpegOf(t)}}})
	if err != nil || res.Status != sema.StatusCompleted {
		t.Fatalf("res=%+v err=%v", res, err)
	}
	if c := p.Requests()[0].Messages[0].Content; len(c) != 1 || c[0].Kind != model.KindImage || c[0].MediaType != "image/jpeg" {
		t.Fatalf("first message %+v", c)
	}
}

// The OpenAI provider sends a prompt's images as image_url parts with data URLs, after
// the prompt's text.
func TestPromptImagesReachTheOpenAIWire(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	shot := pngOf(t, 2, 3, color.RGBA{B: 90, A: 255})
	writeFile(t, filepath.Join(root, "shot.png"), shot)
	srv := openaitest.NewServer(t, openaitest.Turn{Text: "blue-ish"})
	p, err := openai.New(openai.Config{BaseURL: srv.URL(), HTTPClient: &http.Client{}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := agent.New(agent.Deps{Provider: p}).Run(context.Background(), agent.TaskSpec{
		Prompt: "colour?", Root: root, Model: "gpt-test", Images: []agent.Image{{Path: filepath.Join(root, "shot.png")}},
	})
	if err != nil || res.Status != sema.StatusCompleted {
		t.Fatalf("res=%+v err=%v", res, err)
	}
	var body struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := srv.Requests()[0].Decode(&body); err != nil {
		t.Fatal(err)
	}
	var parts []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		ImageURL struct {
			URL string `json:"url"`
		} `json:"image_url"`
	}
	for _, m := range body.Messages {
		if m.Role == "user" {
			if err := json.Unmarshal(m.Content, &parts); err != nil {
				t.Fatalf("user content %s: %v", m.Content, err)
			}
			break
		}
	}
	want := "data:image/png;base64," + base64.StdEncoding.EncodeToString(shot)
	if len(parts) != 2 || parts[0].Type != "text" || parts[0].Text != "colour?" || parts[1].Type != "image_url" || parts[1].ImageURL.URL != want {
		t.Fatalf("user parts %+v; want the text and the PNG's data URL", parts)
	}
}

// A path is attached exactly where the Read tool would read it: for each path, the
// attachment's refusal (or its acceptance) is the Read call's, code for code.
func TestPromptImagePathsJudgedAsRead(t *testing.T) {
	t.Parallel()
	root, outside := t.TempDir(), t.TempDir()
	shot := pngOf(t, 2, 2, color.Black)
	writeFile(t, filepath.Join(root, "secrets", "shot.png"), shot)
	writeFile(t, filepath.Join(root, ".aws", "shot.png"), shot)
	writeFile(t, filepath.Join(outside, "out.png"), shot)
	if err := os.Symlink(filepath.Join(outside, "out.png"), filepath.Join(root, "link.png")); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(root, filepath.Join(outside, "out.png"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, path string
		disallow   []string
		homeRoot   bool
		code       string
	}{
		{"allowed", "secrets/shot.png", nil, false, ""},
		{"deny rule", "secrets/shot.png", []string{"Read(./secrets/**)"}, false, "permission.denied"},
		{"deny rule of another path", "secrets/shot.png", []string{"Read(./public/**)"}, false, ""},
		{"symlink out of the roots", "link.png", nil, false, "fs.path_not_in_root"},
		{"dot-dot escape", rel, nil, false, "fs.path_not_in_root"},
		{"credential store", ".aws/shot.png", nil, true, "fs.path_denied"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			if c.homeRoot {
				home = root
			}
			p := scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "seen"}}})
			_, err := agent.New(agent.Deps{Provider: p, Home: home}).Run(context.Background(),
				agent.TaskSpec{Prompt: "look", Root: root, DisallowedTools: c.disallow, Images: []agent.Image{{Path: c.path}}})
			attached := sema.CodeOf(err)

			in, _ := json.Marshal(map[string]string{"file_path": c.path})
			p = scripted.New(scripted.Script{Turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{call("Read", string(in))}}, {Text: "done"}}})
			read, seen := "", false
			for ev, err := range agent.New(agent.Deps{Provider: p, Home: home}).Events(context.Background(),
				agent.TaskSpec{Prompt: "look", Root: root, DisallowedTools: c.disallow}) {
				if err != nil {
					t.Fatal(err)
				}
				if ev.Type == agent.EventToolResult && ev.ToolResult != nil && ev.ToolResult.Name == "Read" {
					read, seen = ev.ToolResult.Code, true
				}
			}
			if !seen || attached != c.code || read != c.code {
				t.Fatalf("attaching %s: %q; Read: %q (seen %v); want %q for both", c.path, attached, read, seen, c.code)
			}
		})
	}
}
