package later_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/sema-agent/sema/internal/later"
)

// Every waiter gets f's result, once f has returned, and none before.
func TestWaitersGetTheResultAfterItIsMade(t *testing.T) {
	release := make(chan struct{})
	var returned time.Time
	boom := errors.New("boom")
	v := later.Start(func() (int, error) {
		<-release
		returned = time.Now()
		return 7, boom
	})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := v.Wait()
			if n != 7 || !errors.Is(err, boom) || time.Now().Before(returned) {
				t.Errorf("Wait = %d, %v at the wrong time", n, err)
			}
		}()
	}
	time.Sleep(10 * time.Millisecond)
	close(release)
	wg.Wait()
	if n, _ := v.Wait(); n != 7 {
		t.Fatalf("a later Wait = %d", n)
	}
}
