module github.com/raftlet/raftlet/examples/kv

go 1.24

require (
	github.com/raftlet/raftlet/bindings/go v0.0.0
	go.etcd.io/raft/v3 v3.6.0
)

require (
	github.com/gogo/protobuf v1.3.2 // indirect
	github.com/golang/protobuf v1.5.4 // indirect
	google.golang.org/protobuf v1.33.0 // indirect
)

replace github.com/raftlet/raftlet/bindings/go => ../../bindings/go
