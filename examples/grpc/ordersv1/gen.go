// Package ordersv1 is the generated code of orders.proto, checked in so the
// example builds without protoc. Regenerate with `go generate` (needs protoc,
// protoc-gen-go and protoc-gen-go-grpc on PATH).
package ordersv1

//go:generate protoc --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative orders.proto
