"""Reading a webhook body safely: size counted on the bytes received, JSON parsed exactly."""

from __future__ import annotations

import asyncio
import codecs
import json
import re
import urllib.parse
import zlib
from decimal import Decimal
from typing import Any

from starlette.requests import ClientDisconnect, Request

from receiver.problems import Problem
from reconcile.payloads.text import (
    MAX_JSON_DEPTH,
    json_depth,
    may_hold_surrogates,
    mend_surrogates,
)

# The slug of a delivery whose sender left before its body arrived: nothing to keep.
CLIENT_GONE = "client-disconnected"


BODY_TIMEOUT = "body-timeout"


async def read_body(request: Request, max_bytes: int, timeout: float) -> bytes:
    """The body, within ``max_bytes`` and ``timeout`` seconds: a sender stalled mid-body
    is answered 408 and its connection closed, so that it gives its delivery slot back."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise Problem(413, "body-too-large", f"body larger than {max_bytes} bytes")
    # Content-Length can lie or be absent (chunked); count what actually arrives.
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(timeout):
            async for chunk in request.stream():
                size += len(chunk)
                if size > max_bytes:
                    raise Problem(413, "body-too-large", f"body larger than {max_bytes} bytes")
                chunks.append(chunk)
    except TimeoutError:
        raise Problem(
            408,
            BODY_TIMEOUT,
            f"the body did not arrive within {timeout:g} s of the request "
            "(PIXRECON_BODY_TIMEOUT_SECONDS); nothing was stored",
            headers={"Connection": "close"},
        ) from None
    except ClientDisconnect:
        # Nothing was acknowledged, so nothing is lost: the sender retries. A refusal
        # like any other (logged at INFO), not a fault of the receiver's.
        raise Problem(
            400, CLIENT_GONE, "the client closed the connection before its body arrived"
        ) from None
    return b"".join(chunks)


# zlib's wbits: a gzip member, or a zlib stream (what HTTP calls ``deflate``).
_ENCODINGS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}


def _zlib_header(body: bytes) -> bool:
    """RFC 1950's two header bytes: method 8 (deflate), and a check sum divisible by 31."""
    return len(body) >= 2 and body[0] & 0x0F == 8 and (body[0] << 8 | body[1]) % 31 == 0


def decode_body(request: Request, body: bytes, max_bytes: int, flags: list[str]) -> bytes:
    """The body as its sender wrote it, when it came compressed (``Content-Encoding``:
    ``gzip`` or ``deflate``): some HTTP clients compress what they post. Codings listed
    together (``gzip, identity``) were applied in that order and are undone in reverse;
    ``identity`` changes nothing. The limit counts what decompresses, read no further than
    one byte past it, so a small bomb is refused without being inflated. A body that is
    not compressed but plainly JSON is read as it came, and ``flags`` says so — under a
    coding not decoded here (``br``, ``zstd``) too: only a body compressed in one is
    refused."""
    header = request.headers.get("content-encoding", "")
    codings = [c.strip().lower() for c in header.split(",")]
    codings = [c for c in codings if c not in ("", "identity")]
    for encoding in reversed(codings):
        try:
            body = _inflate(body, encoding, max_bytes)
        except Problem as problem:
            # A sender that labels what it did not compress (a proxy that removed the
            # compression, a client setting the header by default): the JSON is readable.
            # Under a coding we cannot undo, the whole body must look like JSON, its last
            # byte too: a compressed one refused as such tells its sender what is wrong.
            if not (
                (problem.status == 400 and _plain_json(body))
                or (problem.status == 415 and _plain_json(body, whole=True))
            ):
                raise
            name = encoding if _CODING.fullmatch(encoding) else "another coding"
            flags.append(
                f"a body compressed as its Content-Encoding says, {name} (it came uncompressed)"
            )
            break
    return body


# A coding's name as the flag repeats it: a token, short; a header a sender made up is
# no business of an item's warnings.
_CODING = re.compile(r"[a-z0-9._+-]{1,24}")


def _plain_json(body: bytes, *, whole: bool = False) -> bool:
    text = body.removeprefix(codecs.BOM_UTF8).strip()
    if whole and text[-1:] not in (b"}", b"]"):
        return False
    return text[:1] in (b"{", b"[")


def _inflate(body: bytes, encoding: str, max_bytes: int) -> bytes:
    wbits = _ENCODINGS.get(encoding)
    if wbits is None:
        raise Problem(415, "unsupported-media-type", f"unsupported Content-Encoding {encoding}")
    if encoding == "deflate" and not _zlib_header(body):
        # HTTP's ``deflate`` is a zlib stream, but some clients send bare deflate data
        # under that name (as browsers accept it): read that too rather than refuse it.
        wbits = -zlib.MAX_WBITS
    inflater = zlib.decompressobj(wbits)
    try:
        decoded = inflater.decompress(body, max_bytes + 1)
    except zlib.error:
        raise Problem(400, "malformed-json", f"the body is not valid {encoding}") from None
    if len(decoded) > max_bytes:
        raise Problem(413, "body-too-large", f"body larger than {max_bytes} bytes")
    if not inflater.eof:
        raise Problem(400, "malformed-json", f"the body is not valid {encoding}: it is cut short")
    return decoded


def _not_json(media_type: str, detail: str) -> Problem:
    # The declared type is advisory: senders omit it or send ``text/plain`` on perfectly
    # good JSON, and refusing an authenticated notification brings the provider closer to
    # disabling the webhook. Only a body that is not JSON either is refused for its type.
    if media_type and media_type != "application/json" and not media_type.endswith("+json"):
        # What was wrong with the body too: a sender whose JSON came in another encoding
        # than it declared must learn that, not only that the type was not JSON.
        return Problem(
            415,
            "unsupported-media-type",
            f"expected application/json, got {media_type}, and {detail}",
        )
    return Problem(400, "malformed-json", detail)


def _undecodable(exc: UnicodeDecodeError, declared: str | None) -> str:
    why = (
        "the charset its Content-Type declares"
        if declared is not None
        else "the encoding its first bytes tell"
    )
    return f"body is not {exc.encoding} text ({why}): bytes at offset {exc.start} do not decode"


def _codec(charset: str | None) -> str | None:
    """The declared charset's codec, if it is a text encoding: ``base64``, ``zlib`` and
    ``rot13`` are codecs Python knows but no charset, and are taken as undeclared, like a
    name nobody knows."""
    if not charset:
        return None
    try:
        codec = codecs.lookup(charset)
    except LookupError:
        return None
    return codec.name if getattr(codec, "_is_text_encoding", True) else None


# Charsets of one byte a character: any bytes decode in them, so a wrong declaration never
# fails, it only garbles every accented letter.
_SINGLE_BYTE = frozenset(("iso8859-1", "cp1252", "iso8859-15", "latin-1"))


def _text(body: bytes, charset: str | None, flags: list[str]) -> str:
    """The body as JSON text: in the declared charset if there is one, else as JSON's own
    encodings are told apart (UTF-8, with or without a byte order mark, UTF-16, UTF-32).
    Bytes that are not UTF-8 under no declared charset are read as ISO-8859-1, as older
    Brazilian systems send them: every business key is ASCII, so reading the rest that way
    loses no notification, and the raw body is kept as it came."""
    declared = _codec(charset)
    if declared in _SINGLE_BYTE and not body.isascii():
        # Text of another charset is almost never valid UTF-8 with letters beyond ASCII;
        # a UTF-8 body sent under ISO-8859-1's name is: read so, "João" stays "João".
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            pass
        else:
            flags.append(
                f"a body in the charset its Content-Type declares, {declared} (read as UTF-8,"
                " which its bytes are)"
            )
            return text
    if declared is not None and declared != "utf-8":
        return body.decode(declared)
    encoding = json.detect_encoding(body)
    try:
        return body.decode(encoding)
    except UnicodeDecodeError:
        if encoding not in ("utf-8", "utf-8-sig"):
            raise
        return body.decode("iso-8859-1")


class _Members:
    """``object_pairs_hook`` for one document: an object with a member named twice
    (``{"pix": [A], "pix": [B]}``) is read with the arrays joined, every other value the
    last one, and the names are noted: JSON leaves repeated names undefined, and reading
    only the last array would lose a Pix without a word."""

    def __init__(self) -> None:
        self.repeated: set[str] = set()

    def __call__(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        found = dict(pairs)
        if len(found) == len(pairs):
            return found
        found = {}
        for name, value in pairs:
            if name in found:
                self.repeated.add(name)
                before = found[name]
                if isinstance(before, list) and isinstance(value, list):
                    value = [*before, *value]
            found[name] = value
        return found


def _loads(text: str, flags: list[str]) -> Any:
    # Numbers become Decimal so that 110.10 stays 110.10 (money is never float).
    # ``NaN``, ``Infinity`` and ``-Infinity`` are not JSON, though Python reads them: kept
    # as their text they are an amount that cannot be read (flagged on the item), and the
    # item's stored payload stays JSON that any reader parses.
    members = _Members()
    try:
        document = json.loads(
            text, parse_float=Decimal, parse_constant=str, object_pairs_hook=members
        )
    except ValueError:
        document = _loads_leniently(text, flags, members)
    if members.repeated:
        # Names a sender made up are no business of a log or a metric: a few, cut short.
        names = ", ".join(sorted(name[:40] for name in members.repeated)[:5])
        flags.append(
            f"objects with each member once ({names} repeated: arrays were joined, otherwise"
            " the last was read)"
        )
    return document


def _loads_leniently(text: str, flags: list[str], members: _Members) -> Any:
    """Tried only after a failure, so that the common body pays nothing. An integer of
    more digits than Python converts by default (4,300) is valid JSON, and an amount too
    large to be money: read as a Decimal it is flagged, not refused. A tab or a line break
    written raw inside a string (``"infoPagador": "pedido<LF>123"``) is no JSON, but its
    meaning is plain: read, and flagged. A body that is not JSON either fails here, with
    the parser's own message."""
    lenient = {"parse_float": Decimal, "parse_int": Decimal, "parse_constant": str}
    try:
        return json.loads(text, object_pairs_hook=members, **lenient)
    except ValueError as first:
        try:
            document = json.loads(
                text,
                strict=False,
                object_pairs_hook=members,
                **lenient,
            )
        except ValueError:
            return _one_after_another(text, first, flags, members, lenient)
    flags.append("JSON strings without raw control characters (read as written)")
    return document


# What may stand between documents sent one after another: whitespace, and the NUL a C
# sender writes after its string when it posts the terminator too.
_BETWEEN = " \t\r\n\x00"
# Documents read one after another at most: each costs the event loop a call of its own,
# and a relay's batch is far smaller; more (a body of bare numbers, say) is refused.
MAX_DOCUMENTS = 1000


def _one_after_another(
    text: str, first: ValueError, flags: list[str], members: _Members, lenient: dict[str, Any]
) -> Any:
    """Documents sent one after another (newline-delimited, as a relay that batches
    deliveries sends them), read as an array of them; one followed by NUL bytes, as that
    one. Each is JSON, and their keys are readable: refused, the delivery would be retried
    as it is until the provider disabled the webhook. Anything else fails with ``first``."""
    decoder = json.JSONDecoder(object_pairs_hook=members, **lenient)
    found: list[Any] = []
    at = 0
    while True:
        while at < len(text) and text[at] in _BETWEEN:
            at += 1
        if at == len(text):
            break
        if len(found) == MAX_DOCUMENTS:
            raise first
        try:
            value, at = decoder.raw_decode(text, at)
        except ValueError:
            raise first from None
        found.append(value)
    if not found:
        raise first  # NUL bytes alone: no document at all
    if len(found) == 1:
        flags.append("one JSON document and nothing after it (NUL bytes were not read)")
        return found[0]
    flags.append(
        f"one JSON document (it came as {len(found)} one after another, read as an array of them)"
    )
    return found


def _refused(media_type: str, charset: str | None, exc: ValueError) -> Problem:
    declared = _codec(charset)
    # Valid UTF-8 JSON read in another declared charset is no JSON at all: the
    # sender's operator must be told which charset the body was read in.
    read_in = (
        f" (read as {declared}, the charset its Content-Type declares)"
        if declared is not None
        else ""
    )
    form = ", nor a form whose one field holds it" if media_type == _FORM else ""
    return _not_json(media_type, f"body is not valid JSON{read_in}{form}: {exc}")


_FORM = "application/x-www-form-urlencoded"


def _form_json(body: bytes, flags: list[str]) -> tuple[str, Any] | None:
    """The JSON document some gateways post as the one field of a form (``payload=…``,
    ``data=…``, ``json=…``), and its text; ``None`` for any other form. Tried only once
    the body failed to read as JSON."""
    try:
        fields = urllib.parse.parse_qsl(
            body.decode("utf-8"),
            keep_blank_values=True,
            strict_parsing=True,
            errors="strict",
            max_num_fields=1,
        )
    except ValueError:  # UnicodeDecodeError too
        return None
    if len(fields) != 1:
        return None
    text = fields[0][1]
    document = _held_json(text, flags, "a JSON body (it came as the one field of a form)")
    return None if document is None else (text, document)


def _held_json(text: str, flags: list[str], how: str) -> dict[str, Any] | list[Any] | None:
    """The object or array a text holds, read as a body is, with ``how`` it came added to
    ``flags``; ``None`` when it holds none. Too deep is refused as a body would be."""
    if text.strip()[:1] not in ("{", "["):
        return None
    read: list[str] = []
    try:
        document = _loads(text, read)
    except RecursionError:
        raise Problem(400, "malformed-json", "JSON nested too deeply") from None
    except ValueError:
        return None
    if not isinstance(document, dict | list):
        return None
    flags.extend([how, *read])
    return document


def _unquoted(text: str, document: str, flags: list[str]) -> tuple[str, Any]:
    """The JSON document some gateways send encoded once more, as a JSON string
    (``"{\\"pix\\": [...]}"``), and its text; the string and its text as they were when
    it holds no object or array. Its depth is bounded by the caller, as the body's is; it is
    no longer than the body."""
    inner = _held_json(document, flags, "a JSON document (it came as a JSON string holding one)")
    return (text, document) if inner is None else (document, inner)


def parse_json(request: Request, body: bytes, flags: list[str]) -> Any:
    """The body's JSON document; what about it was not as HTTP and JSON say, but readable
    all the same, is added to ``flags`` (one phrase each, flagged on every item)."""
    content_type = request.headers.get("content-type", "")
    media_type, _, params = content_type.partition(";")
    media_type = media_type.strip().lower()
    charset = next(
        (
            value.strip().strip('"').lower()
            for name, _, value in (p.partition("=") for p in params.split(";"))
            if name.strip().lower() == "charset"
        ),
        None,
    )
    if not body.removeprefix(codecs.BOM_UTF8).strip():
        # Providers test a URL at registration by posting nothing: it says nothing, like
        # ``{}``, and is kept the same way (unsupported) rather than refused.
        return {}
    try:
        try:
            text = _text(body, charset, flags)
            document = _loads(text, flags)
        except (UnicodeDecodeError, ValueError) as first:
            if _codec(charset) in (None, "utf-8"):
                raise
            # The declared charset is wrong (a UTF-8 body sent as ``US-ASCII``, say): JSON
            # tells its own encoding, and every business key is ASCII. Refused, the
            # delivery would be retried as it is until the provider disabled the webhook.
            try:
                text = _text(body, None, flags)
                document = _loads(text, flags)
            except (UnicodeDecodeError, ValueError):
                raise first from None
    except RecursionError:
        raise Problem(400, "malformed-json", "JSON nested too deeply") from None
    except UnicodeDecodeError as exc:
        raise _not_json(media_type, _undecodable(exc, _codec(charset))) from None
    except ValueError as exc:
        posted = _form_json(body, flags) if media_type == _FORM else None
        if posted is None:
            raise _refused(media_type, charset, exc) from None
        text, document = posted
    if isinstance(document, str):
        text, document = _unquoted(text, document, flags)
    # Each level but the innermost opens with a bracket: a text with few cannot be deep,
    # and counting them is a fraction of walking the document.
    shallow = text.count("{") + text.count("[") < MAX_JSON_DEPTH
    if not shallow and json_depth(document, MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
        raise Problem(400, "malformed-json", f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
    # Before any model or key sees it: the raw body keeps the text as it came.
    return mend_surrogates(document) if may_hold_surrogates(text) else document
