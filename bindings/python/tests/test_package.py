"""The package surface: names, version, docstrings, stubs shipped."""

from __future__ import annotations

import inspect

import pytest
import pathlib

import raftlet
import raftlet._raftlet as native

EXPECTED = {
    # DESIGN §5 classes.
    "Config", "MemoryStorage", "RawNode", "Ready", "Message", "Entry", "HardState",
    "SoftState", "ConfState", "Snapshot", "ConfChange", "ConfChangeV2", "ConfChangeSingle",
    "ReadState", "Status", "BasicStatus", "Progress",
    # The learner lifecycle.
    "MembershipEvent", "NotPromotable", "LearnerStatus", "LocalRead",
    # Issue 15: the durable storage.
    "DiskStorage",
    # Enums.
    "MessageType", "EntryType", "ConfChangeType", "ConfChangeTransition", "StateRole",
    "ReadOnlyOption",
    # Exceptions.
    "RaftError", "ProposalDroppedError", "StepLocalMessageError", "StepPeerNotFoundError",
    "StorageError", "CompactedError", "UnavailableError", "SnapshotOutOfDateError",
    "SnapshotTemporarilyUnavailableError", "ConfigError", "DecodeError",
    "ConfChangeRefusedError", "PromotionNotReadyError", "TooManyLearnersError",
    "TransferRefusedError", "NoLeaderError", "ReadyStaleError", "InvalidStateError",
    "ForeignReadyError", "ReadyNotPersistedError", "InvalidMessageError",
    "PanicError",
    "__version__",
}


def test_public_names() -> None:
    assert set(raftlet.__all__) == EXPECTED
    for name in raftlet.__all__:
        assert hasattr(raftlet, name), name


def test_version() -> None:
    assert raftlet.__version__ == native.__version__
    cargo = pathlib.Path(__file__).resolve().parents[3] / "Cargo.toml"
    if cargo.exists():
        assert f'version = "{raftlet.__version__}"' in cargo.read_text()


def test_exception_hierarchy() -> None:
    for name in EXPECTED:
        obj = getattr(raftlet, name)
        if name.endswith("Error"):
            assert issubclass(obj, raftlet.RaftError), name
    for sub in (raftlet.CompactedError, raftlet.UnavailableError, raftlet.SnapshotOutOfDateError,
                raftlet.SnapshotTemporarilyUnavailableError):
        assert issubclass(sub, raftlet.StorageError)
    assert issubclass(raftlet.ConfigError, ValueError)
    assert issubclass(raftlet.DecodeError, ValueError)
    assert issubclass(raftlet.ForeignReadyError, ValueError)
    e = raftlet.PromotionNotReadyError("m", id=4, lag=7, pending_snapshot=True, recent_active=False)
    assert (str(e), e.id, e.lag, e.pending_snapshot, e.recent_active) == ("m", 4, 7, True, False)


def test_every_class_and_method_has_a_docstring() -> None:
    missing = []
    for name in dir(native):
        cls = getattr(native, name)
        if not inspect.isclass(cls):
            continue
        if not (cls.__doc__ or "").strip():
            missing.append(name)
        for attr, value in vars(cls).items():
            if attr.startswith("_"):
                continue
            if not (getattr(value, "__doc__", None) or "").strip():
                missing.append(f"{name}.{attr}")
    assert missing == []


def test_classes_live_in_the_native_module() -> None:
    assert raftlet.RawNode.__module__ == "raftlet._raftlet"
    assert raftlet.MessageType.__module__ == "raftlet._enums"


def test_typed_package() -> None:
    pkg = pathlib.Path(raftlet.__file__).parent
    assert (pkg / "py.typed").exists()
    assert (pkg / "_raftlet.pyi").exists()


def test_core_log_records_reach_the_raftlet_logger(caplog: pytest.LogCaptureFixture) -> None:
    """Role changes logged by the Rust core arrive at logging.getLogger("raftlet")."""
    import logging

    import raftlet

    storage = raftlet.MemoryStorage(raftlet.ConfState(voters=[7]))
    node = raftlet.RawNode(raftlet.Config(7), storage)
    with caplog.at_level(logging.INFO, logger="raftlet"):
        node.campaign()
        while node.has_ready():
            rd = node.ready()
            storage.append(rd.entries)
            if rd.hard_state is not None:
                storage.set_hard_state(rd.hard_state)
            node.advance(rd)
    messages = [r.getMessage() for r in caplog.records if r.name == "raftlet"]
    assert "7 became leader at term 1" in messages, messages
    assert all(getattr(r, "raft_node_id", None) == 7 for r in caplog.records if r.name == "raftlet")
