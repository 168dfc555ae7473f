"""Config: the core's names and defaults, validation, argument errors."""

from __future__ import annotations

import pytest

from raftlet import Config, ConfigError, MemoryStorage, RaftError, RawNode, ReadOnlyOption

DEFAULTS = {
    "id": 0,
    "election_tick": 10,
    "heartbeat_tick": 1,
    "applied": 0,
    "max_size_per_msg": 1024 * 1024,
    "max_committed_size_per_ready": 0,
    "max_uncommitted_entries_size": 0,
    "max_inflight_msgs": 256,
    "max_inflight_bytes": 0,
    "check_quorum": True,
    "pre_vote": True,
    "read_only_option": "Safe",
    "disable_proposal_forwarding": False,
    "disable_conf_change_validation": False,
    "step_down_on_removal": True,
    "promote_max_lag": 1000,
    "max_learners": 1,
    "seed": 0,
    "coalesce_appends": True,
}


def test_defaults_match_the_core() -> None:
    c = Config()
    for name, value in DEFAULTS.items():
        assert getattr(c, name) == value, name
    assert c.read_only_option is ReadOnlyOption.SAFE
    assert Config(1).id == 1 and Config(id=2).id == 2


def test_every_field_can_be_set_by_keyword_and_attribute() -> None:
    values = {
        "election_tick": 20,
        "heartbeat_tick": 2,
        "applied": 5,
        "max_size_per_msg": 4096,
        "max_committed_size_per_ready": 8192,
        "max_uncommitted_entries_size": 1 << 20,
        "max_inflight_msgs": 16,
        "max_inflight_bytes": 1 << 16,
        "check_quorum": False,
        "pre_vote": False,
        "read_only_option": ReadOnlyOption.SAFE,
        "disable_proposal_forwarding": True,
        "disable_conf_change_validation": True,
        "step_down_on_removal": False,
        "promote_max_lag": 7,
        "max_learners": 3,
        "seed": 42,
        "coalesce_appends": False,
    }
    c = Config(3, **values)  # type: ignore[arg-type]
    d = Config(3)
    for name, value in values.items():
        assert getattr(c, name) == value, name
        setattr(d, name, value)
    assert c == d
    d.id = 4
    assert c != d
    c.validate()


def test_read_only_option() -> None:
    c = Config(1, read_only_option="LeaseBased")
    assert c.read_only_option is ReadOnlyOption.LEASE_BASED
    c.read_only_option = ReadOnlyOption.SAFE
    assert c.read_only_option == "Safe"
    with pytest.raises(ValueError, match="'Safe' or 'LeaseBased'"):
        Config(1, read_only_option="Fast")
    with pytest.raises(TypeError, match="ReadOnlyOption or str"):
        c.read_only_option = 1  # type: ignore[assignment]


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"id": 0}, "id"),
        ({"id": 1, "heartbeat_tick": 0}, "heartbeat_tick"),
        ({"id": 1, "election_tick": 1}, "election_tick"),
        ({"id": 1, "max_inflight_msgs": 0}, "max_inflight_msgs"),
        ({"id": 1, "max_inflight_bytes": 10}, "max_inflight_bytes"),
        ({"id": 1, "read_only_option": "LeaseBased", "check_quorum": False}, "check_quorum"),
    ],
)
def test_invalid_configs_raise_config_error(kwargs: dict[str, object], field: str) -> None:
    c = Config(**kwargs)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=field) as info:
        c.validate()
    assert isinstance(info.value, ValueError) and isinstance(info.value, RaftError)
    # RawNode validates too.
    with pytest.raises(ConfigError, match=field):
        RawNode(c, MemoryStorage())


def test_argument_errors() -> None:
    with pytest.raises(TypeError, match="expected an int, got str"):
        Config("1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="non-negative"):
        Config(-1)
    with pytest.raises(ValueError, match="non-negative"):
        Config(1, election_tick=-5)
    with pytest.raises(TypeError):
        Config(1, check_quorum="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Config(1, no_such_field=1)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Config(1, 10)  # type: ignore[call-arg]
    c = Config(1)
    with pytest.raises(ValueError):
        c.seed = -1


def test_repr() -> None:
    r = repr(Config(1))
    assert r.startswith("Config(id=1, election_tick=10, heartbeat_tick=1, ")
    assert "read_only_option='Safe'" in r and "check_quorum=True" in r
