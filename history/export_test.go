package history

// BlobCount returns how many blobs the store holds.
func (m *Memory) BlobCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.blobs)
}

// SchemaSteps is the SQLite store's migration list, for tests that build an older file.
var SchemaSteps = schema
