package server

import (
	_ "embed"
	"net/http"
)

// openAPI is the API's OpenAPI 3.1 document, kept in the repository beside the code
// that serves it; a test holds the two to the same routes.
//
//go:embed openapi.json
var openAPI []byte

func serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(openAPI)
}
