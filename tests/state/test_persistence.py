from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from crawler.state.persistence import (
    STATE_FILES_NAME,
    Journal,
    StateFileError,
    read_header,
    read_snapshot,
    signature_difference,
    write_snapshot,
)

SIGNATURE = {"DEDUP_URL_LOWERCASE_PATH": False, "version": 1}


def test_snapshot_round_trip(tmp_path):
    path = tmp_path / "state.snapshot"
    write_snapshot(path, "bloom", SIGNATURE, {"capacity": 10}, b"payload")
    assert read_snapshot(path, "bloom", SIGNATURE) == ({"capacity": 10}, b"payload")
    assert not path.with_name("state.snapshot.tmp").exists()


def test_missing_snapshot_is_none(tmp_path):
    assert read_snapshot(tmp_path / "absent", "bloom", SIGNATURE) is None


def test_snapshot_with_other_rules_names_the_difference(tmp_path):
    path = tmp_path / "state.snapshot"
    write_snapshot(path, "bloom", SIGNATURE, {}, b"x")
    other = {**SIGNATURE, "DEDUP_URL_LOWERCASE_PATH": True}
    with pytest.raises(StateFileError) as excinfo:
        read_snapshot(path, "bloom", other)
    assert "DEDUP_URL_LOWERCASE_PATH: False -> True" in str(excinfo.value)
    assert str(path) in str(excinfo.value)


def test_a_snapshot_of_another_release_says_no_setting_brings_it_back(tmp_path):
    path = tmp_path / "state.snapshot"
    write_snapshot(path, "content", {**SIGNATURE, "fingerprint.version": 4}, {}, b"x")
    with pytest.raises(StateFileError) as excinfo:
        read_snapshot(path, "content", {**SIGNATURE, "fingerprint.version": 5})
    message = str(excinfo.value)
    assert "another release of the extension (fingerprint.version: 4 -> 5)" in message
    assert "Restore the settings" not in message
    assert "another state directory to start afresh" in message


def test_snapshot_of_another_kind(tmp_path):
    path = tmp_path / "state.snapshot"
    write_snapshot(path, "memory", SIGNATURE, {}, b"x")
    with pytest.raises(StateFileError, match="holds 'memory' state, expected 'bloom'"):
        read_snapshot(path, "bloom", SIGNATURE)


def test_corrupt_snapshot_is_reported(tmp_path):
    path = tmp_path / "state.snapshot"
    write_snapshot(path, "bloom", SIGNATURE, {}, b"payload-bytes")
    data = bytearray(path.read_bytes())
    data[-3] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(StateFileError, match="does not match the checksum"):
        read_snapshot(path, "bloom", SIGNATURE)


def test_foreign_file_is_reported(tmp_path):
    path = tmp_path / "state.snapshot"
    path.write_bytes(b"PK\x03\x04 a zip file")
    with pytest.raises(StateFileError, match="not a dedup state file"):
        read_snapshot(path, "bloom", SIGNATURE)


def test_signature_difference_lists_each_change():
    assert signature_difference({"a": 1}, {"a": 1}) == ""
    assert signature_difference({"a": 1, "b": 2}, {"a": 3}) == "a: 1 -> 3; b: 2 -> '<absent>'"


def _replayed(journal: Journal) -> list[bytes]:
    records: list[bytes] = []
    journal.open(records.append)
    return records


def test_journal_replays_in_order_across_instances(tmp_path):
    path = tmp_path / "j.journal"
    journal = Journal(path, "frontier", SIGNATURE)
    assert _replayed(journal) == []
    for record in (b"one", b"", b"three"):
        journal.append(record)
    journal.close()
    assert _replayed(Journal(path, "frontier", SIGNATURE)) == [b"one", b"", b"three"]


def test_journal_drops_a_torn_tail_and_keeps_the_rest(tmp_path, caplog):
    path = tmp_path / "j.journal"
    journal = Journal(path, "frontier", SIGNATURE)
    _replayed(journal)
    journal.append(b"kept")
    journal.append(b"torn-record")
    journal.close()
    os.truncate(path, path.stat().st_size - 4)
    reopened = Journal(path, "frontier", SIGNATURE)
    assert _replayed(reopened) == [b"kept"]
    assert reopened.torn_bytes == 8 + len(b"torn-record") - 4
    assert "cut short" in caplog.text
    reopened.append(b"after")
    reopened.close()
    assert _replayed(Journal(path, "frontier", SIGNATURE)) == [b"kept", b"after"]


def test_journal_corruption_before_the_tail_raises(tmp_path):
    path = tmp_path / "j.journal"
    journal = Journal(path, "frontier", SIGNATURE)
    _replayed(journal)
    journal.append(b"first-record")
    journal.append(b"second-record")
    journal.close()
    data = bytearray(path.read_bytes())
    data[data.index(b"first-record")] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(StateFileError, match="fails its checksum"):
        _replayed(Journal(path, "frontier", SIGNATURE))


def test_journal_with_other_rules_raises(tmp_path):
    path = tmp_path / "j.journal"
    _replayed(Journal(path, "frontier", SIGNATURE))
    with pytest.raises(StateFileError, match="version: 1 -> 2"):
        _replayed(Journal(path, "frontier", {**SIGNATURE, "version": 2}))


def test_a_full_disk_takes_no_part_of_a_record_and_keeps_the_journal_open(small_filesystem):
    """A full disk may take part of a record without an error: that part is taken back
    (no torn record for a later one to follow), the append raises, and once there is
    room the journal goes on; a compaction the disk refuses leaves the journal as it was."""
    mount_point, grow = small_filesystem
    path = mount_point / "j.journal"
    journal = Journal(path, "frontier", SIGNATURE)
    _replayed(journal)
    record = b"r" * 3000
    appended = 0
    with pytest.raises(OSError, match="No space left on device"):
        while True:
            journal.append(record)
            appended += 1
    assert appended > 10
    size = path.stat().st_size
    with pytest.raises(OSError, match="No space left on device"):
        journal.restart([b"compacted"] * 2000)
    assert path.stat().st_size == size
    assert not (mount_point / "j.journal.tmp").exists()
    grow()
    journal.append(b"after")
    journal.close()
    reopened = Journal(path, "frontier", SIGNATURE)
    assert _replayed(reopened) == [record] * appended + [b"after"]
    assert reopened.torn_bytes == 0


def test_journal_restart_keeps_only_given_records(tmp_path):
    path = tmp_path / "j.journal"
    journal = Journal(path, "frontier", SIGNATURE)
    _replayed(journal)
    journal.append(b"old")
    journal.restart([b"compacted"])
    journal.append(b"new")
    journal.close()
    assert _replayed(Journal(path, "frontier", SIGNATURE)) == [b"compacted", b"new"]


def test_appended_records_survive_kill_9(tmp_path):
    """Each append is one write(): nothing is left in a user-space buffer."""
    path = tmp_path / "j.journal"
    script = textwrap.dedent(
        f"""
        import os, signal
        from pathlib import Path
        from crawler.state.persistence import Journal
        journal = Journal(Path({str(path)!r}), "frontier", {SIGNATURE!r})
        journal.open(lambda record: None)
        for i in range(1000):
            journal.append(str(i).encode())
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    completed = subprocess.run([sys.executable, "-c", script], check=False)
    assert completed.returncode == -9
    assert _replayed(Journal(path, "frontier", SIGNATURE)) == [str(i).encode() for i in range(1000)]


def test_journal_read_leaves_the_file_alone(tmp_path):
    path = tmp_path / "j.journal"
    journal = Journal(path, "frontier", SIGNATURE)
    assert journal.read() == []
    assert not path.exists()
    _replayed(journal)
    journal.append(b"kept")
    journal.append(b"being-written")
    journal.close()
    os.truncate(path, path.stat().st_size - 4)
    before = path.read_bytes()
    reader = Journal(path, "frontier", SIGNATURE)
    assert reader.read() == [b"kept"]
    assert (reader.records, reader.torn_bytes) == (1, 8 + len(b"being-written") - 4)
    assert path.read_bytes() == before
    assert not reader.is_open


def test_read_header_of_either_file_without_checking_rules(tmp_path):
    snapshot = tmp_path / "s.snapshot"
    write_snapshot(snapshot, "bloom", SIGNATURE, {"capacity": 10}, b"x")
    journal = Journal(tmp_path / "j.journal", "frontier", SIGNATURE)
    _replayed(journal)
    journal.close()
    assert read_header(snapshot)["params"] == {"capacity": 10}
    assert read_header(snapshot)["signature"] == SIGNATURE
    assert read_header(journal.path)["kind"] == "frontier"
    assert read_header(tmp_path / "absent") is None
    (tmp_path / "foreign").write_bytes(b"not a state file at all")
    with pytest.raises(StateFileError, match="not a dedup state file"):
        read_header(tmp_path / "foreign")


def journal_after_a_snapshot(tmp_path):
    snapshot = tmp_path / "seen-urls.snapshot"
    journal = Journal(
        tmp_path / "seen-urls.journal", "bloom-seen-urls", SIGNATURE, snapshot=snapshot
    )
    journal.open(lambda record: None)
    journal.append(b"before")
    write_snapshot(snapshot, "bloom-seen-urls", SIGNATURE, {}, b"state")
    journal.restart()
    journal.append(b"after")
    journal.close()
    return snapshot, journal


def test_a_journal_names_the_snapshot_it_follows(tmp_path):
    snapshot, journal = journal_after_a_snapshot(tmp_path)
    assert read_header(journal.path)["snapshot"] == "seen-urls.snapshot"
    again = Journal(journal.path, journal.kind, SIGNATURE, snapshot=snapshot)
    assert again.read() == [b"after"]


def test_a_journal_whose_snapshot_is_gone_is_refused(tmp_path):
    snapshot, journal = journal_after_a_snapshot(tmp_path)
    snapshot.unlink()
    again = Journal(journal.path, journal.kind, SIGNATURE, snapshot=snapshot)
    with pytest.raises(StateFileError, match=f"{snapshot} is missing: .* start afresh"):
        again.open(lambda record: None)
    assert journal.path.read_bytes()  # left as it was


def test_a_snapshot_whose_journal_is_gone_is_refused_unless_it_is_recreated(tmp_path):
    snapshot, journal = journal_after_a_snapshot(tmp_path)
    journal.path.unlink()
    again = Journal(journal.path, journal.kind, SIGNATURE, snapshot=snapshot)
    with pytest.raises(StateFileError, match=f"{journal.path} is missing beside {snapshot}"):
        again.check_files()  # as a crawl checks while it is built
    with pytest.raises(StateFileError, match=f"{journal.path} is missing beside {snapshot}"):
        again.open(lambda record: None)
    assert not journal.path.exists()
    journal.path.touch()  # the way out the error names: go on from the snapshot alone
    again.check_files()
    again.open(lambda record: None)
    assert again.records == 0


def test_a_journal_before_any_snapshot_needs_none(tmp_path):
    snapshot = tmp_path / "content-index.snapshot"
    journal = Journal(
        tmp_path / "content-index.journal", "content-index", SIGNATURE, snapshot=snapshot
    )
    journal.open(lambda record: None)
    journal.append(b"first")
    journal.close()  # killed before the first snapshot
    assert "snapshot" not in read_header(journal.path)
    again = Journal(journal.path, journal.kind, SIGNATURE, snapshot=snapshot)
    assert again.read() == [b"first"]


def test_a_store_whose_files_are_both_gone_is_refused(tmp_path):
    """The directory lists every state file it held: deleting a journal with its snapshot
    forgets as much as deleting one of them."""
    snapshot, journal = journal_after_a_snapshot(tmp_path)
    assert json.loads((tmp_path / STATE_FILES_NAME).read_text()) == [
        "seen-urls.journal",
        "seen-urls.snapshot",
    ]
    snapshot.unlink()
    journal.path.unlink()
    again = Journal(journal.path, journal.kind, SIGNATURE, snapshot=snapshot)
    with pytest.raises(StateFileError, match=f"{journal.path} is missing, though this state"):
        again.check_files()
    journal.path.touch()  # the way out the error names for a journal
    with pytest.raises(StateFileError, match=f"{snapshot} is missing"):
        again.check_files()
    (tmp_path / STATE_FILES_NAME).unlink()  # the other: start afresh
    journal.path.unlink()
    again.check_files()


def test_a_directory_without_the_list_of_its_files_is_checked_as_before(tmp_path):
    """A directory written before the list existed (or with the list removed) has nothing
    listed: its files are checked in pairs only, and the list is written from then on."""
    snapshot, journal = journal_after_a_snapshot(tmp_path)
    (tmp_path / STATE_FILES_NAME).unlink()
    Journal(journal.path, journal.kind, SIGNATURE, snapshot=snapshot).check_files()
    fresh = Journal(tmp_path / "frontier.journal", "frontier", SIGNATURE)
    fresh.open(lambda record: None)
    fresh.close()
    assert json.loads((tmp_path / STATE_FILES_NAME).read_text()) == ["frontier.journal"]


def test_a_damaged_list_of_state_files_is_refused(tmp_path):
    snapshot, journal = journal_after_a_snapshot(tmp_path)
    (tmp_path / STATE_FILES_NAME).write_text('{"seen-urls.journal": 1}')
    again = Journal(journal.path, journal.kind, SIGNATURE, snapshot=snapshot)
    with pytest.raises(StateFileError, match=f"{STATE_FILES_NAME} is corrupt"):
        again.check_files()
