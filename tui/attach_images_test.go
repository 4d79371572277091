package tui

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/sema-agent/sema/agent"
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/scripted"
	"github.com/sema-agent/sema/session"
)

// tinyPNG is the signature and header of a 1x1 PNG: enough for the screen, which never
// decodes what it attaches.
var tinyPNG = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82")

// imageTree makes a root with images (one with a space in its name), a text file and
// a directory named like an image.
func imageTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, f := range []string{"shot.png", "sub/two words.JPG", "notes.txt", "photo.gif"} {
		p := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, tinyPNG, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(root, "dir.png"), 0o755); err != nil {
		t.Fatal(err)
	}
	return root
}

// A word @path or an absolute path naming an existing image file becomes an
// attachment; anything else stays as typed.
func TestAttachImages(t *testing.T) {
	root := imageTree(t)
	shot, two, gif := filepath.Join(root, "shot.png"), filepath.Join(root, "sub", "two words.JPG"), filepath.Join(root, "photo.gif")
	for _, c := range []struct {
		name, prompt, text string
		images             []string
	}{
		{"@ relative", "what is in @shot.png", "what is in [image: shot.png]", []string{shot}},
		{"@ at the start, punctuation after", "@shot.png: explain.", "[image: shot.png]: explain.", []string{shot}},
		{"@ absolute", "see @" + gif + " now", "see [image: photo.gif] now", []string{gif}},
		{"pasted absolute", "compare " + shot + " and " + gif + "?", "compare [image: shot.png] and [image: photo.gif]?", []string{shot, gif}},
		{"dropped, quoted", "look '" + two + "' please", "look [image: two words.JPG] please", []string{two}},
		{"dropped, escaped space", "look " + strings.ReplaceAll(two, " ", `\ `), "look [image: two words.JPG]", []string{two}},
		{"kept lines", "one\n\t@shot.png\ntwo", "one\n\t[image: shot.png]\ntwo", []string{shot}},
		{"missing file", "what is in @gone.png", "what is in @gone.png", nil},
		{"not an image's ending", "read @notes.txt", "read @notes.txt", nil},
		{"a directory", "list @dir.png", "list @dir.png", nil},
		{"bare relative", "what is in shot.png", "what is in shot.png", nil},
		{"inside a word", "mail me@shot.png", "mail me@shot.png", nil},
		{"missing absolute", "see /nonexistent/x.png", "see /nonexistent/x.png", nil},
		{"unclosed quote", "see '" + shot, "see '" + shot, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			text, images := attachImages(c.prompt, root)
			if text != c.text || !slices.Equal(images, c.images) {
				t.Fatalf("attachImages(%q) = %q %q; want %q %q", c.prompt, text, images, c.text, c.images)
			}
		})
	}
	if text, images := attachImages("what is in @shot.png", ""); text != "what is in @shot.png" || images != nil {
		t.Fatalf("without a root @shot.png is %q %q; want it left as typed", text, images)
	}
}

// imageBackend is the fake back-end that takes images too.
type imageBackend struct {
	fakeBackend
	imu    sync.Mutex
	images [][]string
}

func (b *imageBackend) PromptImages(ctx context.Context, prompt string, images []string, emit func(agent.Event)) error {
	b.imu.Lock()
	b.images = append(b.images, images)
	b.imu.Unlock()
	return b.Prompt(ctx, prompt, emit)
}

// A prompt naming an image, completed with @, is sent with the image's path and shows
// the attachment in its conversation line.
func TestAttachImageSent(t *testing.T) {
	root := imageTree(t)
	b := &imageBackend{fakeBackend: fakeBackend{legs: [][]step{{text("a tiny image"), result(0.001)}}}}
	h := newHarness(t, Options{Backend: b, Roots: []string{root}}, 80, 24)
	h.typeText("what is in @sho", false)
	h.until("the walk", func() bool { return h.m.comp != nil && len(h.m.comp.items) > 0 })
	h.key(tea.KeyTab, 0)
	h.typeText("and why?", true)
	h.until("the leg's end", h.idle)
	b.mu.Lock()
	prompts := slices.Clone(b.prompts)
	b.mu.Unlock()
	if want := "what is in [image: shot.png] and why?"; len(prompts) != 1 || prompts[0] != want {
		t.Fatalf("prompts %q; want %q", prompts, want)
	}
	if len(b.images) != 1 || !slices.Equal(b.images[0], []string{filepath.Join(root, "shot.png")}) {
		t.Fatalf("images %q", b.images)
	}
	if !strings.Contains(h.frame(), "what is in [image: shot.png] and why?") {
		t.Fatalf("the conversation does not show the attachment:\n%s", h.frame())
	}
	h.golden("attach_image")
}

// A back-end without images (attach) sends nothing: the screen says why and the prompt
// goes back to the input; a queued prompt after it still runs.
func TestAttachImageRefusedWithoutImages(t *testing.T) {
	root := imageTree(t)
	b := &fakeBackend{}
	h := newHarness(t, Options{Backend: b, Roots: []string{root}}, 80, 24)
	h.typeText("what is in @shot.png ", true)
	if n := b.promptCount(); n != 0 {
		t.Fatalf("%d prompts sent", n)
	}
	frame := h.frame()
	if !strings.Contains(frame, "images are not supported over attach") || !strings.Contains(frame, "shot.png") {
		t.Fatalf("no refusal on the screen:\n%s", frame)
	}
	if v := h.m.input.Value(); v != "what is in @shot.png" {
		t.Fatalf("input %q; want the prompt back", v)
	}
	h.m.input.SetValue("")
	h.m.running = true
	h.m.queue = []string{"see @shot.png", "plain words"}
	h.do(h.m.legDone(nil))
	h.until("the queue", h.idle)
	b.mu.Lock()
	defer b.mu.Unlock()
	if !slices.Equal(b.prompts, []string{"plain words"}) {
		t.Fatalf("prompts %q; want the plain one only", b.prompts)
	}
}

// Local sends the attached file through the runner: the image's bytes are in the
// first request's prompt message; a file the fence refuses refuses the leg by name.
func TestLocalPromptImages(t *testing.T) {
	root := imageTree(t)
	prov := scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "seen"}}})
	l := NewLocal(agent.New(agent.Deps{Provider: prov, Store: session.NewMemory(), Shell: &agent.ShellOptions{Sandbox: "off"}}), agent.TaskSpec{Root: root, OnAsk: agent.OnAskDeny})
	var evs []agent.Event
	if err := l.PromptImages(context.Background(), "what is in [image: shot.png]", []string{filepath.Join(root, "shot.png")}, func(ev agent.Event) { evs = append(evs, ev) }); err != nil {
		t.Fatal(err)
	}
	if r := first(evs, agent.EventResult).Result; r == nil || r.Result != "seen" {
		t.Fatalf("result %+v", r)
	}
	c := prov.Requests()[0].Messages[0].Content
	if len(c) != 2 || c[0].Text != "what is in [image: shot.png]" || c[1].Kind != model.KindImage || !bytes.Equal(c[1].Data, tinyPNG) {
		t.Fatalf("first message %+v", c)
	}
	outside := filepath.Join(t.TempDir(), "out.png")
	if err := os.WriteFile(outside, tinyPNG, 0o644); err != nil {
		t.Fatal(err)
	}
	err := l.PromptImages(context.Background(), "and this", []string{outside}, func(agent.Event) {})
	if err == nil || !strings.Contains(err.Error(), "fs.path_not_in_root") || len(prov.Requests()) != 1 {
		t.Fatalf("a file outside the roots: err %v, %d requests", err, len(prov.Requests()))
	}
}
