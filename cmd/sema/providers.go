package main

import (
	"github.com/sema-agent/sema/model"
	"github.com/sema-agent/sema/model/modelref"
)

// openProvider builds the provider a PROVIDER/MODEL reference names (modelref.Open).
func openProvider(ref, baseURL string) (model.Provider, string, error) {
	return modelref.Open(ref, baseURL)
}
