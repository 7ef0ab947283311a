"""Schemathesis over every operation /v1/openapi.json lists at run time, on both state stores.

Each operation gets valid (positive) and invalid (negative) cases from its schema, sent with a real
session token and, for most cases, real path values (an org of its own, a member, a token, a key,
an invite). Every response must be: no 5xx; every non-2xx the Error envelope; a status the
document lists; the documented content type; a body that matches the documented schema; and
schema-invalid input refused with 4xx. All findings are collected and reported together.

The document must also be as tight as the API: schema-valid (positive) cases sent with real path
values are measured per operation, and an operation whose such cases are mostly refused as
invalid (400 bad_request: schemathesis's positive_data_acceptance fails on them) is a finding, so a
generated client that validates before it sends is not left guessing. A minority is tolerated:
some rules the document states only approximately (a DNS name, an SSH key), the server's own
check being the authority; the operations refused sometimes are listed in the report."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from dataclasses import dataclass
from typing import Any

import hypothesis
import schemathesis
from hypothesis import HealthCheck, Phase
from hypothesis import strategies as st
from pydantic import SecretStr
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import FailureGroup
from schemathesis.core.result import Ok
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    positive_data_acceptance,
    response_schema_conformance,
    status_code_conformance,
)

from svc.adapters.billing.fake import FakePolar
from svc.adapters.billing.polar import PolarBilling
from svc.adapters.database.postgres import PostgresNode
from svc.adapters.database.process import PrivateCluster
from svc.adapters.registrar import FakeRegistrar
from svc.adapters.registrar.client import RegistrarClient
from svc.domains.credentials.sshkeys import PUBLIC_KEY_FORMAT
from svc.domains.email import records
from svc.domains.email.settings import EmailSettings
from tests.api.fuzz import BASE_URL, ServerErrors, World, build_world, is_error_envelope, loop_session, public_keys
from tests.support.api import Svc

# Cases per operation: 30, fewer once the API has grown past CASE_BUDGET / 30 operations, so one
# store's run stays near half a minute (about 40 ms a case here).
MAX_EXAMPLES = 30
MIN_EXAMPLES = 10
CASE_BUDGET = 900
Operation = schemathesis.APIOperation[Any, Any, Any, Any]
MAX_FINDINGS = 3  # per operation
# The document names the format of an SSH public key line, which no pattern can check fully (a curve
# point, an RSA modulus): real keys of every accepted type, as schemathesis lets a client supply.
schemathesis.openapi.format(PUBLIC_KEY_FORMAT, public_keys())
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance,
          negative_data_rejection]
# Positive cases with real path values: at least this many per operation to judge it, and the share
# of them refused as invalid above which the document is looser than the API.
MIN_MEASURED = 5
CURSORS = {"cursor", "before"}  # query parameters that take a page cursor the API handed out
MAX_REFUSED_SHARE = 0.5


@dataclass
class Acceptance:
    """Positive cases of one operation sent with real path values, and those refused as invalid."""

    measured: int = 0
    refused: int = 0
    example: str = ""


def _strategy(operation: Operation, world: World) -> st.SearchStrategy[tuple[bool, Any]]:
    """Cases, each with whether it is measured: positive, with the real path values."""
    names = {p.name for p in operation.path_parameters}
    real = {k: v for k, v in world.path.items() if k in names}
    headers = {"Authorization": f"Bearer {world.token}"}

    def measured(case: schemathesis.Case[Operation]) -> tuple[bool, Any]:
        # Values only the API can say (no schema states them) are given as a client gives them, so
        # the rest is what is measured: a confirmation (`confirm` must equal the name of what is
        # deleted, the path's last name), and a page cursor (a nextCursor it handed out: left out).
        if isinstance(case.body, dict) and "confirm" in case.body and real:
            last = max(real, key=operation.path.index)
            case.body["confirm"] = real[last]
        if case.query:
            for name in CURSORS & case.query.keys():
                del case.query[name]
        # And a project's first password: mode password needs one the first time it is set (the
        # description says so; the state that decides it is the project's, which no schema states).
        if isinstance(case.body, dict) and case.body.get("mode") == "password" and case.body.get("password") is None:
            case.body["password"] = "a first password"
        return True, case

    def unmeasured(case: schemathesis.Case[Operation]) -> tuple[bool, Any]:
        return False, case

    positive_real = operation.as_strategy(schemathesis.GenerationMode.POSITIVE, path_parameters=real, headers=headers)
    options = [operation.as_strategy(schemathesis.GenerationMode.NEGATIVE, headers=headers).map(unmeasured)]
    if real:
        options.append(operation.as_strategy(schemathesis.GenerationMode.POSITIVE, headers=headers).map(unmeasured))
        if real.keys() != names or operation.body or operation.query:
            options.append(operation.as_strategy(schemathesis.GenerationMode.NEGATIVE, path_parameters=real,
                                                 headers=headers).map(unmeasured))
    # Not measured: a path value the world lacks (drawn, so 404s say nothing of the document), or a
    # body that is not JSON (a bundle, a gzipped tar: a shape no schema states).
    if real.keys() != names or not all(body.media_type == "application/json" for body in operation.body):
        return st.one_of([positive_real.map(unmeasured), *options])
    # Half the cases are measured, so each operation has enough of them to judge.
    return st.one_of(positive_real.map(measured), st.one_of(options))


def _fuzz(operation: Operation, world: World, svc: Svc, loop: asyncio.AbstractEventLoop,
          statuses: Counter[int], acceptance: Acceptance, examples: int) -> list[str]:
    """Runs in a worker thread; returns the findings for this operation (the first few)."""
    findings: list[str] = []
    session = loop_session(svc.app, loop)
    label = f"{operation.method.upper()} {operation.path}"

    @hypothesis.settings(max_examples=examples, deadline=None, database=None, derandomize=False,
                         phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck),
                         report_multiple_bugs=False)
    @hypothesis.given(drawn=_strategy(operation, world))
    def run(drawn: tuple[bool, schemathesis.Case[Operation]]) -> None:
        measured, case = drawn
        response = case.call(base_url=BASE_URL, session=session)
        statuses[response.status_code] += 1
        body: object = None
        if response.status_code >= 400:
            try:
                body = response.json()
            except ValueError:
                body = response.text
            if not is_error_envelope(body):
                curl = case.as_curl_command(headers=dict(response.request.headers))
                findings.append(f"{label}: {response.status_code} is not the Error envelope: {body!r}\n{curl}")
        transport = {"base_url": BASE_URL, "session": session}
        try:
            case.validate_response(response, checks=CHECKS, transport_kwargs=transport)
        except FailureGroup as exc:
            findings.append(f"{label}:\n{exc}")
        if measured:
            acceptance.measured += 1
            try:
                case.validate_response(response, checks=[positive_data_acceptance], transport_kwargs=transport)
            except FailureGroup:
                # Refused as invalid: the validation code, not a rule of the API's state (a name taken).
                if isinstance(body, dict) and body.get("code") == "bad_request":
                    acceptance.refused += 1
                    acceptance.example = acceptance.example or f"{body.get('message')}\n{case.as_curl_command()}"

    try:
        run()
    except Exception as exc:  # a crash of the generator or the transport is a finding too
        findings.append(f"{label}: {type(exc).__name__}: {exc}")
    finally:
        session.close()
    return findings[:MAX_FINDINGS]


async def test_every_operation_survives_schemathesis(dns_svc: Svc, project_cluster: PrivateCluster) -> None:
    svc = dns_svc  # DNS on a real PowerDNS, so its routes run their code rather than answer 503
    # And the projects' databases on a real cluster, for the same reason.
    svc.ctx.adapters.database = node = PostgresNode(project_cluster.admin_url)
    # Billing against the fake Polar (a real HTTP server), so its routes run their code too.
    secret = "whsec_fuzz"
    fake = FakePolar(webhook_secret=secret, hook_url="/v1/hooks/polar", http=svc.anon)
    await fake.start()
    svc.ctx.adapters.billing = PolarBilling(access_token=fake.access_token, product_id=fake.product_id,
                                            credit_product_id=fake.credit_product_id,
                                            sandbox=True, base_url=fake.url, timeout_seconds=5,
                                            webhook_secret=SecretStr(secret))
    # Domains against the fake registrar (a real HTTP server), so its routes run their code too.
    registrar = FakeRegistrar()
    await registrar.start()
    svc.ctx.adapters.registrar = RegistrarClient(registrar.url, registrar.api_key, timeout_seconds=5)
    # Email with a mail domain and a provider topic, so its routes (the SES webhook's checks too)
    # run their code rather than answer 503 or 501.
    svc.ctx.own_settings[EmailSettings] = svc.ctx.settings_of(EmailSettings).model_copy(
        update={"mail_domain": "mail.fuzz.test", "mail_topic": "arn:aws:sns:us-east-1:123456789012:fuzz"})
    await records.make_key(svc.ctx)  # as svc's start makes it for its mail domain
    doc = (await svc.anon.get("/v1/openapi.json")).json()
    schema = schemathesis.openapi.from_dict(doc)
    operations: list[Operation] = []
    broken: list[str] = []
    for result in schema.get_all_operations():
        if isinstance(result, Ok):
            operations.append(result.ok())
        else:
            broken.append(f"unusable operation in the document: {result.err()}")
    assert not broken, broken
    # The document lists what the app serves right now (other areas add routes); a floor guards
    # against fuzzing an empty or broken document.
    listed = {(op.method.upper(), op.path) for op in operations}
    assert {("GET", "/v1/me"), ("GET", "/v1/orgs/{orgSlug}/members"), ("POST", "/v1/auth/dev/login")} <= listed

    errors = ServerErrors()  # svc.errors logs every unhandled exception with its traceback
    logging.getLogger("svc.errors").addHandler(errors)
    loop = asyncio.get_running_loop()
    findings: list[str] = []
    seen: dict[str, Counter[int]] = {}
    accepted: dict[str, Acceptance] = {}
    examples = max(MIN_EXAMPLES, min(MAX_EXAMPLES, CASE_BUDGET // len(operations)))
    try:
        for n, operation in enumerate(operations):
            world = await build_world(svc, n)
            label = f"{operation.method.upper()} {operation.path}"
            statuses = seen[label] = Counter()
            acceptance = accepted[label] = Acceptance()
            findings += await asyncio.to_thread(_fuzz, operation, world, svc, loop, statuses, acceptance, examples)
    finally:
        logging.getLogger("svc.errors").removeHandler(errors)
        await node.close()
        await svc.ctx.adapters.billing.aclose()
        svc.ctx.adapters.billing = None
        await fake.stop()
        await svc.ctx.adapters.registrar.aclose()
        svc.ctx.adapters.registrar = None
        await registrar.stop()
    findings += [f"{label}: {a.refused} of {a.measured} schema-valid cases with real path values refused as "
                 f"invalid: the document allows what the API refuses; the first:\n{a.example}"
                 for label, a in accepted.items()
                 if a.measured >= MIN_MEASURED and a.refused > a.measured * MAX_REFUSED_SHARE]
    # Refused now and then: rules the document states only approximately, the server's check deciding.
    sometimes = "\n".join(f"  {label}: {a.refused} of {a.measured}" for label, a in accepted.items() if a.refused)
    print(f"schema-valid cases with real path values refused as invalid, by operation:\n{sometimes or '  none'}")
    summary = "\n".join(f"  {label}: {dict(sorted(c.items()))}" for label, c in seen.items())
    logged = list(dict.fromkeys(errors.records))[:10]
    report = "\n\n".join(findings + [f"server log: {r}" for r in logged])
    assert not findings and not logged, (
        f"{len(findings)} finding(s) over {len(operations)} operations:\n\n{report}\n\nstatuses seen:\n{summary}")
    # The cases reached real code: a broken token or world would turn (nearly) everything into 401/404.
    reached = [label for label, c in seen.items() if any(200 <= s < 300 for s in c)]
    assert len(reached) >= len(seen) / 2, f"too few operations ever succeeded:\n{summary}"
