package openai

import "time"

// SetBackoff replaces the wait between stream-level retries, so that tests of cut
// streams do not sleep.
func SetBackoff(p *Provider, f func(n int) time.Duration) { p.backoff = f }
