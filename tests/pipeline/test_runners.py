"""The remote-runner configurations of docs/runners.md, checked without a cluster.

What runs here: Beam's own option validation for each runner, the graph
built under those options, its portable translation (the protobuf a Flink or
Spark job server receives, with the container environment the workers would
start), the Dataflow job translation in dry-run mode when apache-beam[gcp] is
installed, and the packaging paths workers get the code by (the sdist Beam
builds for --setup_file ./pyproject.toml, the wheel for --extra_package).

What cannot run here: a job server, a cluster or the Dataflow service, so
nothing is executed remotely, no container is pulled or built, and bucket
access (gs://, s3://) is not exercised.
"""
import importlib.util
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions, WorkerOptions
from apache_beam.portability import common_urns
from apache_beam.portability.api import beam_runner_api_pb2
from apache_beam.runners.portability.portable_runner import PortableRunner
from apache_beam.runners.portability.stager import Stager

from sitestrip.configs import load_config
from sitestrip.pipeline.graph import build_pipeline

REPO = Path(__file__).resolve().parents[2]
SAMPLE = str(REPO / "sample" / "sitestrip-sample.warc.gz")
IMAGE = "registry.example/sitestrip:0.1.0"
# The checkout's folders, installed as sitestrip.<folder> (pyproject.toml's package-dir).
# bench/ is a distribution of its own (sitestrip-bench), which the product's sdist and wheel leave out.
PACKAGES = ("pipeline", "transforms", "schemas", "configs")

DATAFLOW = ["--runner=DataflowRunner", "--project=my-project", "--region=us-central1",
            "--temp_location=gs://my-bucket/tmp", f"--sdk_container_image={IMAGE}",
            "--machine_type=n2-highmem-4", "--max_num_workers=20"]
# With apache-beam[gcp] installed, Beam checks the buckets' soft-delete policy
# while validating, which needs GCP; dry-run mode skips that check.
OFFLINE = ["--dry_run=True"]
FLINK = ["--runner=FlinkRunner", "--flink_master=localhost:8081",
         "--environment_type=DOCKER", f"--environment_config={IMAGE}"]
SPARK = ["--runner=SparkRunner", "--spark_master_url=spark://localhost:7077",
         "--environment_type=DOCKER", f"--environment_config={IMAGE}"]
FLINK_LOOPBACK = ["--runner=FlinkRunner", "--flink_master=localhost:8081",
                  "--environment_type=LOOPBACK"]

# Leaf transforms a portable runner executes itself or hands to the SDK
# harness; anything else would need a Python-only expansion on the runner.
PORTABLE_PRIMITIVES = {
    common_urns.primitives.IMPULSE.urn,
    common_urns.primitives.PAR_DO.urn,
    common_urns.primitives.GROUP_BY_KEY.urn,
    common_urns.primitives.FLATTEN.urn,
    common_urns.primitives.ASSIGN_WINDOWS.urn,
    common_urns.combine_components.COMBINE_PER_KEY_PRECOMBINE.urn,
    common_urns.combine_components.COMBINE_PER_KEY_MERGE_ACCUMULATORS.urn,
    common_urns.combine_components.COMBINE_PER_KEY_EXTRACT_OUTPUTS.urn,
}
# Step names the docs and the run summary refer to.
STEPS = ("ReadWarc", "GroupBySite", "ProcessSite", "Write/PartKeys_pages", "Write/PartKeys_menus", "Write/PartKeys_errors")


def built(flags, output):
    options = PipelineOptions(flags)
    p = beam.Pipeline(options=options)
    build_pipeline(p, [SAMPLE], str(output), load_config(None))
    return p, options


def step_names(proto):
    return {t.unique_name for t in proto.components.transforms.values()}


def test_dataflow_options_validate_and_the_graph_serializes(tmp_path):
    """Beam validates Dataflow options when the pipeline is constructed (project
    id, region, gs:// temp location); the graph is then translated to the Runner
    API and read back, which unpickles every DoFn as a worker would."""
    p, options = built(DATAFLOW + OFFLINE, tmp_path / "out")
    assert type(p.runner).__name__ == "DataflowRunner"
    workers = options.view_as(WorkerOptions)
    assert (workers.sdk_container_image, workers.machine_type) == (IMAGE, "n2-highmem-4")
    proto = p.to_runner_api()
    assert all(any(name.startswith(step) for name in step_names(proto)) for step in STEPS)
    again = beam.Pipeline.from_runner_api(proto, p.runner, options)
    assert step_names(again.to_runner_api()) == step_names(proto)


def _dataflow_client_missing():
    try:
        from apache_beam.runners.dataflow.internal import apiclient  # noqa: F401
    except ImportError:
        return True
    return False


@pytest.mark.skipif(not _dataflow_client_missing(),
                    reason="with apache-beam[gcp] installed, Beam answers a bad temp location by "
                           "creating a default bucket in the project, which needs GCP")
def test_dataflow_rejects_a_temp_location_outside_gcs(tmp_path):
    """The docs' requirement is Beam's: Dataflow stages through a gs:// path
    (without the GCP client Beam cannot fall back to a default bucket)."""
    flags = [f for f in DATAFLOW if not f.startswith("--temp_location")]
    with pytest.raises(ValueError, match="temp_location|staging_location"):
        built(flags + OFFLINE + [f"--temp_location={tmp_path}"], tmp_path / "out")


@pytest.mark.skipif(_dataflow_client_missing(),
                    reason="apache-beam[gcp] is not installed: the Dataflow job translation "
                           "needs its API client (pip install 'apache-beam[gcp]==2.77.*')")
def test_dataflow_job_translates_in_dry_run(tmp_path):
    """With --dry_run the Dataflow runner builds the complete job request
    (Runner v2 job with the custom container) and returns before talking to
    the service."""
    p, _ = built(DATAFLOW + OFFLINE + ["--no_auth", "--job_name=sitestrip-test"],
                 tmp_path / "out")
    job = p.run().job
    assert job.proto.name == "sitestrip-test"
    (env,) = job.proto_pipeline.components.environments.values()
    assert env.urn == common_urns.environments.DOCKER.urn
    assert beam_runner_api_pb2.DockerPayload.FromString(env.payload).container_image == IMAGE
    assert all(any(name.startswith(step) for name in step_names(job.proto_pipeline))
               for step in STEPS)


@pytest.mark.parametrize("flags", [FLINK, SPARK], ids=["flink", "spark"])
def test_portable_translation_uses_standard_primitives_in_the_container(flags, tmp_path):
    """What a Flink or Spark job server receives: the pipeline proto after the
    portable runner's own optimization, with the Docker environment of the
    docs' image. Every leaf is a standard primitive, and every step that runs
    Python code runs in that environment."""
    p, options = built(flags, tmp_path / "out")
    assert type(p.runner).__name__ == flags[0].split("=")[1]
    proto = PortableRunner.get_proto_pipeline(p, options)
    envs = proto.components.environments
    docker = [key for key, env in envs.items() if env.urn == common_urns.environments.DOCKER.urn]
    assert len(docker) == 1
    payload = beam_runner_api_pb2.DockerPayload.FromString(envs[docker[0]].payload)
    assert payload.container_image == IMAGE
    leaves = [t for t in proto.components.transforms.values() if not t.subtransforms]
    assert {t.spec.urn for t in leaves} <= PORTABLE_PRIMITIVES
    python_steps = [t for t in leaves if t.spec.urn == common_urns.primitives.PAR_DO.urn]
    assert python_steps and all(t.environment_id == docker[0] for t in python_steps)
    assert all(any(name.startswith(step) for name in step_names(proto)) for step in STEPS)


def test_flink_loopback_flags_build(tmp_path):
    """LOOPBACK (SDK workers inside the submitting process, for a local Flink)
    is accepted; its environment only exists once a job server runs, so this
    stops at the Runner API graph."""
    p, _ = built(FLINK_LOOPBACK, tmp_path / "out")
    assert type(p.runner).__name__ == "FlinkRunner"
    assert p.to_runner_api().components.transforms


# ---------------------------------------------------------------------------
# Packaging: how workers get sitestrip

def _build_tools_missing():
    """Beam runs `python -m build --no-isolation --sdist` for a pyproject.toml,
    so the build backend of [build-system] must be importable here."""
    if importlib.util.find_spec("build") is None:
        return "the 'build' package is not installed"
    import setuptools
    major, minor = (int(x) for x in setuptools.__version__.split(".")[:2])
    if (major, minor) < (77, 0):
        return f"setuptools {setuptools.__version__} is older than [build-system]'s >=77"
    if importlib.util.find_spec("wheel") is None:
        return "the 'wheel' package named in [build-system] is not installed"
    return None


def _project_copy(tmp_path):
    # A copy keeps build/ and egg-info litter out of the checkout; tests,
    # sample and docs are not part of the distribution.
    src = tmp_path / "src"
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(
        ".git", ".ci", ".venv", "venv", "out", "out-*", ".hypothesis", ".pytest_cache",
        "__pycache__", "*.egg-info", "build", "dist", "tests", "sample", "docs"))
    return src


def _staged(resources):
    """staged name -> local file of Beam's artifact list."""
    out = {}
    for artifact in resources:
        path = beam_runner_api_pb2.ArtifactFilePayload.FromString(artifact.type_payload).path
        name = beam_runner_api_pb2.ArtifactStagingToRolePayload.FromString(
            artifact.role_payload).staged_name
        out[name] = path
    return out


def _check_members(names, prefix=""):
    """`prefix` "" is the sdist's source layout (the folders, src/sitestrip/__init__.py),
    "sitestrip/" the installed layout of the wheel."""
    for package in PACKAGES:
        assert f"{prefix}{package}/__init__.py" in names, package
    assert ("sitestrip/__init__.py" if prefix else "src/sitestrip/__init__.py") in names
    assert f"{prefix}configs/default.yaml" in names
    assert any(n.startswith(f"{prefix}transforms/models/") and n.endswith(".json.gz") for n in names)
    assert f"{prefix}transforms/unicode_marks.json" in names
    assert f"{prefix}transforms/etdm.py" in names and f"{prefix}pipeline/graph.py" in names
    # The compiled parts (setup.py): their C sources in the sdist, built modules in the wheel.
    for module in ("_etdm", "_model", "_flatten", "_markdown", "_features", "_text", "_language", "_site"):
        if prefix:
            assert any(n.startswith(f"{prefix}transforms/{module}.") and n.endswith((".so", ".pyd"))
                       for n in names), module
        else:
            assert f"transforms/{module}.c" in names and "setup.py" in names, module
    if not prefix:
        assert "transforms/_crc32.h" in names       # included by _flatten.c and _features.c
        assert "transforms/_buffers.h" in names     # included by _features.c, _site.c and _text.c
    assert [n for n in names if "bench" in n.split("/")[:2] or n.startswith("sitestrip_bench/")] == []


@pytest.mark.slow
@pytest.mark.skipif(_build_tools_missing() is not None,
                    reason=f"packaging tools: {_build_tools_missing()}; "
                           "pip install build 'setuptools>=77' wheel")
def test_setup_file_and_extra_package_stage_the_whole_project(tmp_path):
    """--setup_file ./pyproject.toml: Beam 2.77 builds an sdist of a
    pyproject-only project with `python -m build` and stages it as
    workflow.tar.gz, which the worker pip-installs. The sdist holds every
    package and the default preset, and builds into a wheel on its own (what
    the worker's pip does); that wheel, passed as --extra_package, is staged
    under its own name and listed for installation."""
    src = _project_copy(tmp_path)
    staging = tmp_path / "staging"
    staging.mkdir()
    options = PipelineOptions([f"--setup_file={src / 'pyproject.toml'}"])
    staged = _staged(Stager.create_job_resources(options, str(staging),
                                                 log_submission_env_dependencies=False))
    sdist = staged["workflow.tar.gz"]
    with tarfile.open(sdist) as tar:
        members = {name.split("/", 1)[1] for name in tar.getnames() if "/" in name}
    _check_members(members)

    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "--no-index", "--quiet", "-w", str(wheels), sdist],
                   check=True, cwd=tmp_path, env={**os.environ, "PIP_NO_INPUT": "1"})
    (wheel,) = wheels.glob("sitestrip-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        entry_points = next(zf.read(n).decode() for n in names if n.endswith("entry_points.txt"))
        metadata = next(zf.read(n).decode() for n in names if n.endswith(".dist-info/METADATA"))
    _check_members(names, prefix="sitestrip/")
    # one top-level name: nothing of the wheel lands beside sitestrip/ in site-packages
    assert {n.split("/")[0] for n in names} == {"sitestrip", "sitestrip-0.1.0.dist-info"}
    assert "sitestrip = sitestrip.pipeline.cli:main" in entry_points
    assert "Requires-Dist: apache-beam==2.77.*" in metadata

    options = PipelineOptions([f"--extra_package={wheel}"])
    staged = _staged(Stager.create_job_resources(options, str(staging),
                                                 log_submission_env_dependencies=False))
    assert wheel.name in staged
    assert Path(staged["extra_packages.txt"]).read_text().split() == [wheel.name]


@pytest.mark.beam
@pytest.mark.slow
@pytest.mark.skipif(_build_tools_missing() is not None,
                    reason=f"packaging tools: {_build_tools_missing()}; "
                           "pip install build 'setuptools>=77' wheel")
def test_the_wheel_installed_alone_runs_the_sample(tmp_path):
    """The wheel pip-installed into an empty directory (--target; the dependencies come
    from this environment), with that directory first on sys.path and the checkout
    nowhere on it: the install holds sitestrip/ and its metadata only (plus the console
    script), the modules, the default preset and the shipped model load from it, and a run
    of the sample with `--workers 2` works, so the worker processes
    (`python -m sitestrip.pipeline.worker`) unpickle the DoFns by their sitestrip.* module
    paths. 59 pages and no error: the sample's counts (README, "Try it")."""
    src = _project_copy(tmp_path)
    wheels = tmp_path / "wheels"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "--no-index", "--quiet", "-w", str(wheels), str(src)],
                   check=True, cwd=tmp_path, env={**env, "PIP_NO_INPUT": "1"})
    (wheel,) = wheels.glob("sitestrip-*.whl")
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--quiet",
                    "--target", str(target), str(wheel)],
                   check=True, cwd=tmp_path, env={**env, "PIP_NO_INPUT": "1"})
    assert {p.name for p in target.iterdir()} - {"bin"} == {"sitestrip", "sitestrip-0.1.0.dist-info"}

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env["PYTHONPATH"] = str(target)
    where = subprocess.run(
        [sys.executable, "-c",
         "import sitestrip.transforms.classify as c, sitestrip.configs as g\n"
         "import sitestrip.transforms.etdm as e, sitestrip.transforms.model as m\n"
         "import sitestrip.transforms.page as p\n"
         "print(c.__file__); print(g.load_config('default') is not None)\n"
         "print(sorted(__import__('os').listdir(c.MODEL_DIR)))\n"
         "import sitestrip.transforms.features as f\n"
         "print(e._compiled.__file__); print(m._compiled.__file__); print(p._compiled.__file__)\n"
         "print(f._compiled.__file__)"],
        cwd=elsewhere, env=env, capture_output=True, text=True, timeout=120, check=True)
    module_file, preset_loaded, models, etdm_ext, model_ext, flatten_ext, features_ext = where.stdout.splitlines()
    assert module_file.startswith(str(target / "sitestrip" / "transforms"))
    assert preset_loaded == "True" and ".json.gz" in models
    # the compiled walks come with the wheel
    assert etdm_ext.startswith(str(target / "sitestrip" / "transforms" / "_etdm."))
    assert model_ext.startswith(str(target / "sitestrip" / "transforms" / "_model."))
    assert flatten_ext.startswith(str(target / "sitestrip" / "transforms" / "_flatten."))
    assert features_ext.startswith(str(target / "sitestrip" / "transforms" / "_features."))

    run = subprocess.run([sys.executable, "-m", "sitestrip.pipeline.cli", "run", "--input", SAMPLE,
                          "--output", str(tmp_path / "out"), "--workers", "2", "--quiet"],
                         cwd=elsewhere, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    assert "  pages: 59 " in run.stdout and "errors by stage: none" in run.stdout


def test_pyproject_lists_every_importable_folder_and_an_spdx_license():
    """setuptools warns when a folder under a package is importable (a name Python accepts,
    holding files) but not in `packages` (transforms/models/ was), and when `project.license`
    is a table (deprecated for an SPDX string): a build of the wheel prints neither."""
    tomllib = pytest.importorskip("tomllib")
    data = tomllib.loads((REPO / "pyproject.toml").read_text())
    tool = data["tool"]["setuptools"]
    assert isinstance(data["project"]["license"], str)
    listed = set(tool["packages"])
    for package, directory in tool["package-dir"].items():
        for folder, subdirs, files in os.walk(REPO / directory):
            subdirs[:] = [d for d in subdirs if d.isidentifier() and d != "__pycache__"]
            rel = Path(folder).relative_to(REPO / directory)
            name = ".".join((package, *rel.parts))
            if files and all(part.isidentifier() for part in rel.parts):
                assert name in listed, f"{name} ({folder}) is not in [tool.setuptools] packages"
