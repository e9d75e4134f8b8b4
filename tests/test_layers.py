"""Environment layers (sandbox/layers.py, sandbox/_merge.py, clawloop/core/tasks/layers.py): names,
keys, manifests and the cache without network; layers merged into a bwrap sandbox (read-only,
in the trusted root, never on the host); several uids; one tiny apt and one tiny pip layer
built from the registries (skipped only when the registry is unreachable)."""

from __future__ import annotations

import json
import os
import socket
import textwrap
from pathlib import Path

import pytest

import sandbox
from clawloop.core.tasks.dockerfile_lite import parse_dockerfile
from clawloop.core.tasks.harbor import load_harbor_task
from clawloop.core.tasks.layers import SANDBOX_KEY, layer_skip_reason, layer_specs, uids_unavailable
from clawloop.core.tasks.shell_lite import ACCOUNTS_SETUP, LayerWants, Runtime, classify
from clawloop.core.tasks.task import FileSpec, Task, Verifier
from sandbox import layer_apt as A
from sandbox import layer_spec as S
from sandbox import layers as L
from sandbox._merge import with_userns, wrap

RT = Runtime(frozenset({"pytest", "numpy"}), frozenset({"bash", "python3", "uv"}), frozenset({"bash", "curl"}))


# ------------------------------------------------------------------------ names and keys
@pytest.mark.parametrize("kind,name", [
    ("apt", "a;b"), ("apt", "$(id)"), ("apt", "../etc/passwd"), ("apt", "/usr/bin/x"), ("apt", "-oAPT::X=1"),
    ("apt", "pkg name"), ("apt", "Pkg"), ("apt", "`reboot`"), ("apt", ""), ("apt", "x\nInst y"),
    ("pip", "http://evil/x.whl"), ("pip", "./local"), ("pip", "-e ."), ("pip", "--index-url=http://x"),
    ("pip", "git+https://x/y"), ("pip", "x; rm -rf /"), ("pip", "x @ file:///etc"), ("pip", "a|b"),
])
def test_hostile_package_names_are_refused(kind: str, name: str) -> None:
    with pytest.raises(L.LayerError, match="refused"):
        L.LayerSpec(kind, (name,))


def test_plain_names_are_accepted_and_normalized() -> None:
    s = L.LayerSpec("apt", ("netcat-openbsd", "asciinema", "libssl3:amd64", "g++=4:12.2.0-3", "asciinema"))
    assert s.packages == ("asciinema", "g++=4:12.2.0-3", "libssl3:amd64", "netcat-openbsd")
    p = L.LayerSpec("pip", ("scikit-learn==1.6.1", "requests[socks]>=2,<3", "Pygments"))
    assert p.packages == ("Pygments", "requests[socks]>=2,<3", "scikit-learn==1.6.1")
    with pytest.raises(L.LayerError):
        L.LayerSpec("npm", ("left-pad",))
    with pytest.raises(L.LayerError):
        L.LayerSpec("apt", ())


def test_key_is_a_content_hash_of_kind_packages_and_base() -> None:
    a = L.LayerSpec("apt", ("b", "a"))
    assert L.layer_key(a, "dpkg:1") == L.layer_key(L.LayerSpec("apt", ("a", "b", "a")), "dpkg:1")
    assert L.layer_key(a, "dpkg:1") != L.layer_key(a, "dpkg:2")  # another host: another layer
    assert L.layer_key(a, "dpkg:1") != L.layer_key(L.LayerSpec("apt", ("a",)), "dpkg:1")
    assert L.layer_key(a, "dpkg:1").startswith("apt-") and len(L.layer_key(a, "x")) == 4 + 24
    assert L.LayerSpec.from_json(a.to_json()) == a


def test_runtime_identity_follows_its_distributions(tmp_path: Path) -> None:
    site = tmp_path / "lib" / "python3.11" / "site-packages"
    (site / "pytest-8.0.dist-info").mkdir(parents=True)
    one = S.runtime_identity(tmp_path)
    (site / "numpy-2.0.dist-info").mkdir()
    assert S.runtime_identity(tmp_path) != one


def test_cache_root_honours_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CLAWLOOP_LAYER_CACHE", str(tmp_path / "c"))
    assert L.cache_root() == tmp_path / "c"
    monkeypatch.delenv("CLAWLOOP_LAYER_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert L.cache_root() == tmp_path / "x" / "clawloop" / "layers"


# --------------------------------------------------------------- post-install, statically
def test_ucf_first_install_copies_are_redone(tmp_path: Path) -> None:
    """libreoffice-common's postinst has ucf copy its registry into /etc (soffice aborts without it)."""
    postinst = textwrap.dedent("""\
        #!/bin/sh
        if [ "$1" = "configure" ]; then
          ucf --three-way "/usr/lib/lo/share/.registry/main.xcd" "/etc/lo/registry/main.xcd"
          ucfr --force lo-common "/etc/lo/registry/main.xcd"
          ucf /usr/share/x/default.conf /etc/x.conf
          ucf --debconf-ok $NEW /etc/y.conf
          ucf /usr/share/x/escape.conf /usr/lib/not-etc.conf
          ucf /usr/share/x/dots.conf /etc/../usr/bin/evil
        fi
        """)
    copies = A.ucf_copies([postinst])
    assert copies[:2] == [("/usr/lib/lo/share/.registry/main.xcd", "/etc/lo/registry/main.xcd"),
                          ("/usr/share/x/default.conf", "/etc/x.conf")]
    assert all("$" not in a + b and b.startswith("/etc/") for a, b in copies)
    root, host = tmp_path / "layer", tmp_path / "host"
    for f in ("usr/lib/lo/share/.registry/main.xcd", "usr/share/x/default.conf", "usr/share/x/dots.conf"):
        (root / f).parent.mkdir(parents=True, exist_ok=True)
        (root / f).write_text(f)
    (host / "etc").mkdir(parents=True)
    (host / "etc/x.conf").write_text("the host's")
    made = A.install_ucf(root, copies, host)
    assert made == ["/etc/lo/registry/main.xcd"]  # the host's x.conf stands; ../ is refused
    assert (root / "etc/lo/registry/main.xcd").read_text() == "usr/lib/lo/share/.registry/main.xcd"
    assert not (root / "etc/x.conf").exists() and not (root / "usr/bin/evil").exists()


def test_alternatives_are_read_from_postinst_and_linked(tmp_path: Path) -> None:
    postinst = textwrap.dedent("""\
        #!/bin/sh
        set -e
        if [ "$1" = "configure" ]; then
          update-alternatives --install /bin/nc nc /bin/nc.openbsd 50 \\
            --slave /bin/netcat netcat /bin/nc.openbsd \\
            --slave /usr/share/man/man1/nc.1.gz nc.1.gz /usr/share/man/man1/nc_openbsd.1.gz
          update-alternatives --install /usr/bin/x x /usr/bin/x.low 10
          update-alternatives --install /usr/bin/x x /usr/bin/x.high 90
          update-alternatives --install /usr/bin/$NAME y /usr/bin/y 1
        fi
        """)
    alts = A.alternatives([postinst])
    assert alts["nc"] == ("/bin/nc", "/bin/nc.openbsd", 50) and alts["netcat"][0] == "/bin/netcat"
    assert alts["x"][1] == "/usr/bin/x.high"  # the highest priority wins
    assert "y" not in alts  # built from a shell variable: not reproduced
    root = tmp_path / "layer"
    for f in ("bin/nc.openbsd", "usr/bin/x.high"):
        (root / f).parent.mkdir(parents=True, exist_ok=True)
        (root / f).write_text("#!/bin/sh\n")
    (root / "var/lib/dpkg").mkdir(parents=True)
    A.merge_usr(root)
    assert sorted(p.name for p in root.iterdir()) == ["usr"]  # /bin merged into usr/, var/ dropped
    host = tmp_path / "host"
    (host / "usr/bin").mkdir(parents=True)
    (host / "usr/bin/x").write_text("")  # the host has its own x: its choice stands
    made = A.link_alternatives(root, alts, host)
    assert made == ["nc", "netcat"]
    assert os.readlink(root / "usr/bin/nc") == "/etc/alternatives/nc"
    assert os.readlink(root / "etc/alternatives/nc") == "/usr/bin/nc.openbsd"
    assert not os.path.lexists(root / "usr/bin/x")


def test_seal_and_digest(tmp_path: Path) -> None:
    t = tmp_path / "tree"
    (t / "usr/bin").mkdir(parents=True)
    (t / "usr/bin/tool").write_bytes(b"x")
    os.chmod(t / "usr/bin/tool", 0o4755)  # setuid from a package: dropped
    os.symlink("tool", t / "usr/bin/link")
    d1 = L.tree_digest(t)
    L._seal(t)
    mode = os.stat(t / "usr/bin/tool").st_mode
    assert mode & 0o7777 == 0o555 and os.stat(t / "usr").st_mode & 0o777 == 0o555
    assert L.tree_digest(t) != d1  # modes are part of it
    (t / "usr/bin").chmod(0o755)
    (t / "usr/bin/tool").chmod(0o755)
    (t / "usr/bin/tool").write_bytes(b"y")
    (t / "usr/bin/tool").chmod(0o555)
    (t / "usr/bin").chmod(0o555)
    assert L.tree_digest(t) != d1


def _fake_layer(root: Path, key: str, kind: str = "apt", files: dict[str, str] | None = None) -> L.Layer:
    d = root / key
    tree = d / "tree"
    for rel, text in (files or {"usr/bin/clawloop-layer-hello": "#!/bin/sh\necho hello-from-layer\n"}).items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text(text)
        (tree / rel).chmod(0o755)
    L._seal(tree)
    manifest = {"key": key, "kind": kind, "packages": ["hello"], "resolved": [], "tree_sha256": L.tree_digest(tree)}
    (d / L.MANIFEST).write_text(json.dumps(manifest))
    d.chmod(0o755)
    return L.Layer(key, d, manifest)


def test_list_and_prune_the_cache(tmp_path: Path) -> None:
    a = _fake_layer(tmp_path, "apt-" + "a" * 24)
    _fake_layer(tmp_path, "apt-" + "b" * 24)
    (tmp_path / ".tmp-apt-cccc-x").mkdir()  # an interrupted build
    found = {c.key: c for c in L.list_layers(tmp_path)}
    assert found[a.key].complete and found[a.key].size_bytes > 0 and found[a.key].packages == ("hello",)
    assert not found[".tmp-apt-cccc-x"].complete
    n, _ = L.prune(tmp_path, keys=[a.key])
    assert n == 2 and {c.key for c in L.list_layers(tmp_path)} == {"apt-" + "b" * 24}  # + the leftover
    assert L.prune(tmp_path, older_than_s=3600)[0] == 0
    assert L.prune(tmp_path)[0] == 1 and L.list_layers(tmp_path) == []


def test_a_layer_too_big_to_fetch_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAWLOOP_LAYER_MAX_MB", "0.001")
    monkeypatch.setattr(A, "apt_download_size", lambda pins, cwd: 5 * 2**20)
    with pytest.raises(L.LayerError, match="5 MiB, more than"):
        A._fetch_debs([("x", "1", "all")], tmp_path)


def test_a_manifest_with_a_bad_key_is_refused(tmp_path: Path) -> None:
    with pytest.raises(L.LayerError, match="not a layer key"):
        L.build_from_manifest({"key": "../../etc", "kind": "apt", "packages": ["hello"]}, root=tmp_path)


# ------------------------------------------------------------------ import: what is layered
def test_classify_layers_missing_registry_packages() -> None:
    w = LayerWants()
    kind, why = classify("apt-get install -y --no-install-recommends asciinema curl", RT, layer=w)
    assert kind == "skip" and "asciinema" in (why or "") and w.apt == ["asciinema"]  # curl: the host's
    kind, _ = classify("pip install --no-cache-dir scikit-learn==1.6.1 pytest", RT, layer=w)
    assert kind == "skip" and w.pip == ["scikit-learn==1.6.1"]
    assert classify("pip install scikit-learn==1.5", RT, layer=w)[0] == "skip" and len(w.pip) == 1  # first pin
    assert classify('apt-get install -y "$PKG"', RT, layer=w)[0] == "needs"  # not a plain name
    assert classify("apt-get install -y asciinema", RT)[0] == "needs"  # without layers: as before
    assert classify("pip install uv", RT, layer=w) == ("skip", "satisfied: pip install uv")  # the stand-in
    assert w.to_json() == [{"kind": "apt", "packages": ["asciinema"]}, {"kind": "pip", "packages": ["scikit-learn==1.6.1"]}]


def test_dockerfile_requirements_lock_goes_to_the_pip_layer() -> None:
    lock = "joblib==1.5.3 \\\n    --hash=sha256:ab\nnumpy==2.2.6 \\\n    --hash=sha256:cd\n"
    lr = parse_dockerfile("FROM python:3.12\nCOPY r.lock /tmp/r.lock\n"
                          "RUN pip install --require-hashes --no-deps -r /tmp/r.lock\n",
                          {"r.lock": FileSpec.of(lock)}, RT, layers=True)
    assert lr.needs_image is None and lr.layer is not None and lr.layer.pip == ["joblib==1.5.3"]


def _harbor_dir(tmp_path: Path, dockerfile: str, test_py: str = "def test_x():\n    pass\n") -> Path:
    d = tmp_path / "t"
    (d / "environment").mkdir(parents=True)
    (d / "tests").mkdir()
    (d / "task.toml").write_text('version = "1.0"\n')
    (d / "instruction.md").write_text("Do it.\n")
    (d / "environment" / "Dockerfile").write_text(dockerfile)
    (d / "tests" / "test.sh").write_text("#!/bin/bash\npytest /tests/test_outputs.py && echo 1 > /logs/verifier/reward.txt\n")
    (d / "tests" / "test_outputs.py").write_text(test_py)
    return d


def test_import_records_layers_and_uids(tmp_path: Path) -> None:
    d = _harbor_dir(tmp_path, "FROM python:3.12\nRUN apt-get update && apt-get install -y asciinema\n",
                    "import subprocess\ndef test_x():\n    subprocess.run(['id'], user='nobody')\n")
    t = load_harbor_task(d, runtime=RT)
    assert t.needs_image is None and t.setup == []
    assert t.metadata[SANDBOX_KEY]["layers"] == [{"kind": "apt", "packages": ["asciinema"]}]
    assert "tests/test_outputs.py:3" in t.metadata[SANDBOX_KEY]["uids"]
    assert [s.packages for s in layer_specs(t)] == [("asciinema",)]
    assert "only the bwrap backend" in (layer_skip_reason(t, "local") or "")


def test_user_management_is_kept_and_needs_several_uids() -> None:
    """useradd, groupadd, usermod and chown to a known user are replayed in the task world (once
    dropped as "one user in the sandbox"); the first such line is named as why the task needs
    several uids, and the task world first gets a Debian image's base accounts."""
    lr = parse_dockerfile("FROM python:3.12-slim\nCOPY d/ /srv/data/\n"
                          "RUN groupadd -r svc && useradd -m -g svc -s /bin/bash appuser && usermod -aG sudo appuser"
                          " && chown -R appuser:svc /srv/data && chown www-data /srv && chgrp 1000 /srv/data"
                          " && chown mystery /opt && locale-gen\n",
                          {"d/x": FileSpec.of("x")}, RT, layers=True)
    assert lr.layer is not None and lr.layer.accounts == {"svc", "appuser"}
    assert lr.setup == [ACCOUNTS_SETUP, "cd / && groupadd -r svc && useradd -m -g svc -s /bin/bash appuser && "
                        "usermod -aG sudo appuser && chown -R appuser:svc /srv/data && chown www-data /srv && "
                        "chgrp 1000 /srv/data"]
    assert lr.layer.uids == "Dockerfile:3: user management (groupadd -r svc)"
    assert [x.split(":")[0] for x in lr.skipped] == ["one user in the sandbox"] * 2  # unknown user, locale
    # root's files need no other uid; without layers, user management is dropped as before
    root = parse_dockerfile("FROM u\nRUN mkdir /x && chown -R root:root /x\n", {}, RT, layers=True)
    assert root.layer is not None and root.layer.uids is None and root.setup == ["cd / && mkdir /x && chown -R root:root /x"]
    plain = parse_dockerfile("FROM u\nRUN useradd -m bob && chown bob /srv\n", {}, RT)
    assert plain.setup == [] and len(plain.skipped) == 2


def test_import_records_uids_for_a_dockerfiles_users(tmp_path: Path) -> None:
    d = _harbor_dir(tmp_path, "FROM python:3.12\nRUN adduser --disabled-password --gecos '' bob\n")
    t = load_harbor_task(d, runtime=RT)
    assert t.metadata[SANDBOX_KEY] == {"uids": "environment/Dockerfile:2: user management (adduser "
                                                "--disabled-password --gecos '' bob)"}
    assert t.setup[0] == ACCOUNTS_SETUP and t.setup[1].endswith("adduser --disabled-password --gecos '' bob")


def test_a_hostile_layer_record_is_refused_at_run_time() -> None:
    t = Task(instruction="x", verifier=Verifier(files={"test.sh": FileSpec.of("true")}),
             metadata={SANDBOX_KEY: {"layers": [{"kind": "apt", "packages": ["a;reboot"]}]}})
    with pytest.raises(L.LayerError, match="refused"):
        layer_specs(t)
    assert "refused" in (layer_skip_reason(t, "bwrap") or "")


def test_wrapper_argv() -> None:
    argv = ["/usr/bin/setpriv", "--reuid", "1", "/usr/bin/bwrap", "--unshare-all", "--unshare-user", "--uid", "0",
            "--disable-userns", "--bind", "/r", "/", "bash", "-c", "--unshare-all"]
    out = with_userns(argv, "/usr/bin/bwrap")
    assert "--unshare-user" not in out and "--disable-userns" not in out and "--userns" in out
    assert out[-3:] == ["bash", "-c", "--unshare-all"]  # the command itself is left alone
    w = wrap(argv, {Path("/s/merged-usr"): [Path("/c/l1/tree/usr"), Path("/usr")]}, None)
    assert "lowerdir=/c/l1/tree/usr:/usr /s/merged-usr" in w[w.index("-c") + 1] and w[-len(argv):] == argv
    with pytest.raises(sandbox.SandboxError):
        wrap(argv, {Path("/s/m"): [Path("/c/a:b")]}, None)


# -------------------------------------------------------------------- in a bwrap sandbox
bwrap_only = pytest.mark.skipif(sandbox.unavailable_reason("bwrap") is not None, reason="bwrap unavailable")


@bwrap_only
def test_a_layer_is_merged_read_only_and_in_the_trusted_root(tmp_path: Path) -> None:
    layer = _fake_layer(tmp_path / "cache", "apt-" + "d" * 24, files={
        "usr/bin/clawloop-layer-hello": "#!/bin/sh\necho hello-from-layer\n",
        "etc/alternatives/clawloop-hello": "",
    })
    before = L.tree_digest(layer.tree)
    with sandbox.open("bwrap") as sb:
        sb.add_layers([layer])
        r = sb.exec("clawloop-layer-hello && ls /usr/bin/bash >/dev/null && echo host-usr-still-there")
        assert r.exit_code == 0 and "hello-from-layer" in r.output and "host-usr-still-there" in r.output
        # The agent's attempts on the layer: writes, deletes, chmod, remount all fail.
        attack = sb.exec("echo evil > /usr/bin/clawloop-layer-hello; rm -f /usr/bin/clawloop-layer-hello; "
                         "chmod 777 /usr/bin/clawloop-layer-hello; mount -o remount,rw /usr; "
                         "touch /usr/bin/new-file; clawloop-layer-hello")
        assert "hello-from-layer" in attack.output and "evil" not in attack.output
        assert sb.exec("test -e /usr/bin/new-file").exit_code != 0
        with sb.trusted_root():
            v = sb.exec("clawloop-layer-hello; ls /etc/alternatives/clawloop-hello; touch /usr/bin/x")
            assert "hello-from-layer" in v.output and "/etc/alternatives/clawloop-hello" in v.output
            assert "Read-only" in v.output
    assert L.tree_digest(layer.tree) == before  # the cache is untouched
    assert not Path("/usr/bin/clawloop-layer-hello").exists()  # and the host never saw it


@bwrap_only
def test_several_uids(tmp_path: Path) -> None:
    if uids_unavailable():
        pytest.skip(f"several uids: {uids_unavailable()}")
    with sandbox.open("bwrap") as sb:
        sb.enable_uids()
        r = sb.exec("python3 -c \"import subprocess; subprocess.run(['id', '-u'], user='nobody', check=True)\"; "
                    "setpriv --reuid 1000 --regid 1000 --clear-groups id -u; "
                    "echo s > /root/secret; chmod 600 /root/secret; "
                    "setpriv --reuid 1000 --regid 1000 --clear-groups cat /root/secret; echo rc=$?; "
                    "unshare --user true; echo nested=$?")
        assert "65534\n1000\n" in r.output and "rc=1" in r.output and "nested=1" in r.output
        tests = tmp_path / "tests"
        tests.mkdir()
        (tests / "key.txt").write_text("answer")
        sb.mount(tests, "/tests")
        r = sb.exec("cat /tests/key.txt; setpriv --reuid 65534 --regid 65534 --clear-groups cat /tests/key.txt; "
                    "echo rc=$?; echo x > /tests/key.txt; echo w=$?")
        assert r.output.startswith("answer") and "rc=1" in r.output and "w=1" in r.output
    assert (tests / "key.txt").read_text() == "answer"


@bwrap_only
def test_users_made_in_the_task_world_work_for_agent_and_verifier() -> None:
    """The replayed accounts as Docker has them: adduser (chfn through PAM), usermod into base
    groups, chown to base and new users, su and runuser from root, in the agent's world and in
    the verifier's trusted root; a user cannot su back to root."""
    if uids_unavailable():
        pytest.skip(f"several uids: {uids_unavailable()}")
    with sandbox.open("bwrap") as sb:
        sb.enable_uids()
        r = sb.exec(ACCOUNTS_SETUP + "\nset -e\nadduser --disabled-password --gecos '' bob\n"
                    "useradd -m appuser && usermod -aG sudo appuser\nmkdir -p /srv/data /var/www\n"
                    "chown -R appuser /srv/data && chown www-data:www-data /var/www\n"
                    "su appuser -c 'touch /srv/data/f && id -nG'\nrunuser -u bob -- id -un\n"
                    "stat -c '%U %G' /srv/data/f /var/www /home/appuser /home/bob\n", timeout=60)
        assert r.exit_code == 0, r.output
        assert "appuser sudo" in r.output and "\nbob\n" in r.output
        assert "appuser appuser\nwww-data www-data\nappuser appuser\nbob bob" in r.output
        back = sb.exec("su appuser -c 'su root -c id'; echo rc=$?; setpriv --reuid appuser id -u")
        assert "rc=1" in back.output and "uid=0" not in back.output
        sb.freeze_etc()  # what prepare() does once the setup (the Dockerfile's replay) ran
        with sb.trusted_root():
            v = sb.exec("su appuser -c 'id -un; touch /srv/data/g'; stat -c %U /srv/data/g")
            assert v.exit_code == 0 and v.output.split() == ["appuser", "appuser"], v.output


# ---------------------------------------------------------- from the registries (network)
def _reachable(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=5).close()
        return True
    except OSError:
        return False


@bwrap_only
def test_a_tiny_apt_and_pip_layer_from_the_registries(tmp_path: Path) -> None:
    rt = Path(__file__).resolve().parents[1] / ".runtime"
    specs = [L.LayerSpec("apt", ("hello",))] + ([L.LayerSpec("pip", ("tomli-w==1.2.0",))] if rt.is_dir() else [])
    built = []
    for spec in specs:
        try:
            built.append(L.ensure_layer(spec, rt, root=tmp_path))
        except L.LayerError as e:
            host = "deb.debian.org" if spec.kind == "apt" else "pypi.org"
            if not _reachable(host, 443 if spec.kind == "pip" else 80):
                pytest.skip(f"{host} unreachable: {e}")
            raise
    apt = built[0]
    assert [r["package"] for r in apt.manifest["resolved"]] == ["hello"]  # type: ignore[index]
    assert len(apt.manifest["resolved"][0]["sha256"]) == 64  # type: ignore[index]
    assert L.ensure_layer(specs[0], rt, root=tmp_path).manifest == apt.manifest  # cached
    again = L.build_from_manifest(apt.manifest, rt, root=tmp_path / "again")
    assert again.manifest["tree_sha256"] == apt.manifest["tree_sha256"]  # byte-identical from the pins
    with sandbox.open("bwrap", runtime_dir=rt if rt.is_dir() else None) as sb:
        sb.add_layers(built)
        r = sb.exec("hello && apt-get install -y hello" + (" && python -c 'import tomli_w; print(tomli_w.dumps({\"a\": 1}))'"
                                                            if len(built) > 1 else ""))
        assert r.exit_code == 0 and "Hello, world!" in r.output, r.output
