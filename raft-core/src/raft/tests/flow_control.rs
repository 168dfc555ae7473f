//! Ported etcd tests: flow_control.
