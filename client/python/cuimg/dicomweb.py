"""DICOMweb (PS3.18) for PACS scripts, with the standard library's urllib: read a series from a
DICOMweb server (QIDO-RS to list its instances, WADO-RS to retrieve each as the server stores it,
transfer-syntax=*, decoded by cuimg.dicom) and store a derived one (STOW-RS), by the same rules as
the cuimg CLI's dicomweb+http(s):// URLs (client/io/dicomweb.h).

    from cuimg import dicom, dicomweb
    volume, spacing, slices = dicomweb.read_series(URL, study_uid, series_uid, auth=("user", "pw"))
    dicom.write_series(slices, processed, "out/")
    dicomweb.store_series(URL, "out/", auth=("user", "pw"))

`auth` is None, a (user, password) pair (HTTP basic) or a bearer token string; credentials go over
https only, or plain http to this machine. Responses are untrusted: the instance count and total
bytes are capped (ValueError beyond), multipart answers are parsed strictly, no redirect is
followed (it could carry the credentials elsewhere). Retrieved instances pass through a private
temporary folder to cuimg.dicom.read_series, so both read a series the same way."""
import base64
import io
import json
import os
import secrets
import ssl
import tempfile
import urllib.error
import urllib.parse
import urllib.request

from cuimg import dicom

_DICOM_JSON = "application/dicom+json"
_ONE_DICOM_PART = 'multipart/related; type="application/dicom"'
# PS3.18 8.7.3.5: each instance as the server stores it (a server that cannot transcode its
# stored syntax to the default, Orthanc 1.10 with JPEG 2000, still answers); cuimg.dicom decodes.
_STORED_SYNTAX = _ONE_DICOM_PART + "; transfer-syntax=*"
# What a server that does not take transfer-syntax=* answers (406 Not Acceptable; Orthanc 400).
_REFUSES_STORED_SYNTAX = (400, 406, 415)


class DicomwebError(RuntimeError):
    """An HTTP exchange failed or the server reported failed instances; `status` is the HTTP
    status (0 when none came)."""

    def __init__(self, message, status=0):
        super().__init__(message)
        self.status = status


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def _is_uid(uid):
    return isinstance(uid, str) and 0 < len(uid) <= 64 and all(c.isdigit() or c == "." for c in uid)


def _request(method, url, accept, auth, ca_file, timeout, limit, body=None, content_type=None):
    """(status, content type, body bytes) of one request; any HTTP status is returned."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"{url}: expected an http:// or https:// URL")
    loopback = parts.hostname in ("localhost", "::1") or (parts.hostname or "").startswith("127.")
    headers = {"Accept": accept}
    if auth is not None:
        if parts.scheme == "http" and not loopback:
            raise ValueError(
                f"{url}: credentials are sent over https only (or plain http to this machine)"
            )
        if isinstance(auth, str):
            headers["Authorization"] = f"Bearer {auth}"
        else:
            user, password = auth
            token = base64.b64encode(f"{user}:{password}".encode()).decode()
            headers["Authorization"] = f"Basic {token}"
    if content_type:
        headers["Content-Type"] = content_type
    request = urllib.request.Request(url, data=body, headers=headers, method=method)
    handlers: list[urllib.request.BaseHandler] = [_NoRedirect()]
    if parts.scheme == "https":
        handlers.append(
            urllib.request.HTTPSHandler(context=ssl.create_default_context(cafile=ca_file))
        )
    opener = urllib.request.build_opener(*handlers)
    try:
        response = opener.open(request, timeout=timeout)
    except urllib.error.HTTPError as e:
        response = e
    except urllib.error.URLError as e:
        raise DicomwebError(f"{method} {url}: {e.reason}") from None
    with response:
        # In chunks: read(limit + 1) would allocate the whole limit up front.
        chunks, size = [], 0
        while True:
            chunk = response.read(1 << 20)
            if not chunk:
                break
            size += len(chunk)
            if size > limit:
                raise ValueError(f"{method} {url}: the response is larger than {limit} bytes")
            chunks.append(chunk)
        return response.status, response.headers.get("Content-Type", ""), b"".join(chunks)


def archive_reason(body):
    """What an archive's error answer says, safe to print (the CLI's ArchiveReason): a JSON
    object's "Details" or "Message" string, else the body's first line; printable ASCII only, at
    most 200 characters; "" when it says nothing readable."""
    reason = ""
    try:
        answer = json.loads(body)
    except ValueError:
        answer = None
        reason = body[:1024].split(b"\r")[0].split(b"\n")[0].decode("latin-1")
    if isinstance(answer, dict):
        for key in ("Details", "Message", "message", "error", "HttpError"):
            if isinstance(answer.get(key), str) and answer[key]:
                reason = answer[key]
                break
    out = ""
    for c in reason:
        if " " <= c <= "~":
            out += c
        elif out and out[-1] != " ":
            out += " "
        if len(out) >= 200:
            break
    return out.strip()


def _http_error(what, url, status, body=b""):
    reason = archive_reason(body)
    said = f" (the server says: {reason})" if reason else ""
    hint = " (check the credentials)" if status == 401 else ""
    return DicomwebError(f"{what} {url}: HTTP {status}{said}{hint}", status)


def multipart_boundary(content_type):
    """The boundary parameter of a multipart Content-Type value (ValueError when absent/invalid)."""
    fields = content_type.split(";")
    if not fields[0].strip().lower().startswith("multipart/"):
        raise ValueError(
            f"Content-Type: expected multipart/related, got {fields[0].strip()[:64]!r}"
        )
    for field in fields[1:]:
        name, _, value = field.partition("=")
        if name.strip().lower() != "boundary":
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1]
        allowed = set("'()+_,-./:=? ")
        if (
            not value
            or len(value) > 70
            or value.endswith(" ")
            or any(not (c.isascii() and c.isalnum()) and c not in allowed for c in value)
        ):
            raise ValueError(
                "Content-Type: the boundary parameter is not a valid RFC 2046 boundary"
            )
        return value
    raise ValueError("Content-Type: multipart without a boundary parameter")


def split_multipart(body, boundary, max_parts):
    """[(headers bytes, body bytes)] of a multipart body, by the CLI's rules
    (client/io/multipart.h)."""
    dash = b"--" + boundary.encode()
    delimiter = b"\r\n" + dash
    if body.startswith(dash):
        at = len(dash)
    else:
        at = body.find(delimiter)
        if at < 0:
            raise ValueError("multipart: the body holds no boundary line")
        at += len(delimiter)
    parts: list[tuple[bytes, bytes]] = []
    while True:
        if body[at : at + 2] == b"--":
            return parts
        while body[at : at + 1] in (b" ", b"\t"):
            at += 1
        if body[at : at + 2] != b"\r\n":
            raise ValueError(
                f"multipart: part {len(parts) + 1}: the boundary line does not end in CRLF"
            )
        at += 2
        if len(parts) == max_parts:
            raise ValueError(f"multipart: more than {max_parts} parts")
        headers = b""
        if body[at : at + 2] == b"\r\n":
            at += 2
        else:
            end = body.find(b"\r\n\r\n", at)
            if end < 0:
                raise ValueError(
                    f"multipart: part {len(parts) + 1}: its headers do not end with a blank line"
                )
            headers, at = body[at:end], end + 4
        following = body.find(delimiter, at)
        if following < 0:
            raise ValueError(
                f"multipart: part {len(parts) + 1}: no boundary after it (truncated body?)"
            )
        parts.append((headers, body[at:following]))
        at = following + len(delimiter)


def _first_value(item, tag):
    """A DICOM JSON attribute's first value, None when absent or malformed."""
    attribute = item.get(tag) if isinstance(item, dict) else None
    value = attribute.get("Value") if isinstance(attribute, dict) else None
    return value[0] if isinstance(value, list) and value else None


def _items(item, tag):
    """A DICOM JSON sequence's items ([] when absent or malformed)."""
    attribute = item.get(tag) if isinstance(item, dict) else None
    value = attribute.get("Value") if isinstance(attribute, dict) else None
    return value if isinstance(value, list) else []


def _first_string(item, tag):
    value = _first_value(item, tag)
    return value if isinstance(value, str) else ""


def retrieve_series(
    url,
    study,
    series,
    directory,
    auth=None,
    ca_file=None,
    timeout=300,
    max_instances=4096,
    max_bytes=3 << 30,
):
    """Writes the series' instances into `directory` (instance_NNNNN.dcm); returns their count.
    `url` is the service base (http(s)://host/dicom-web). Instances come as the server stores them
    (transfer-syntax=*), or in its default syntax from a server that refuses that (HTTP 400, 406
    or 415). FileNotFoundError for a series without instances, DicomwebError for HTTP failures
    (the status and what the server said), ValueError for malformed or oversized answers."""
    if not _is_uid(study) or not _is_uid(series):
        raise ValueError("study and series must be UIDs: 1 to 64 digits and dots")
    series_url = f"{url.rstrip('/')}/studies/{study}/series/{series}"
    qido = series_url + "/instances"
    status, _, body = _request("GET", qido, _DICOM_JSON, auth, ca_file, timeout, 64 << 20)
    if status in (204, 404):
        raise FileNotFoundError(f"QIDO-RS {qido}: no instances in this series")
    if status != 200:
        raise _http_error("QIDO-RS", qido, status, body)
    try:
        listing = json.loads(body)
    except ValueError:
        listing = None
    if not isinstance(listing, list):
        raise ValueError(f"QIDO-RS {qido}: the answer is not a DICOM JSON array")
    if not listing:
        raise FileNotFoundError(f"QIDO-RS {qido}: no instances in this series")
    if len(listing) > max_instances:
        raise ValueError(
            f"QIDO-RS {qido}: {len(listing)} instances, more than the limit of {max_instances}"
        )
    sops = [_first_string(item, "00080018") for item in listing]
    for i, sop in enumerate(sops):
        if not _is_uid(sop):
            raise ValueError(
                f"QIDO-RS {qido}: instance {i + 1} has no valid SOPInstanceUID (00080018)"
            )
    total = 0
    accept = _STORED_SYNTAX
    for i, sop in enumerate(sops):
        wado = f"{series_url}/instances/{sop}"
        status, content_type, body = _request(
            "GET", wado, accept, auth, ca_file, timeout, max_bytes - total
        )
        if accept == _STORED_SYNTAX and status in _REFUSES_STORED_SYNTAX:
            accept = _ONE_DICOM_PART  # for this instance and the rest of the series
            status, content_type, body = _request(
                "GET", wado, accept, auth, ca_file, timeout, max_bytes - total
            )
        if status != 200:
            raise _http_error("WADO-RS", wado, status, body)
        total += len(body)
        try:
            parts = split_multipart(body, multipart_boundary(content_type), 1)
        except ValueError as e:
            raise ValueError(f"WADO-RS {wado}: {e}") from None
        if len(parts) != 1:
            raise ValueError(f"WADO-RS {wado}: expected one part, got {len(parts)}")
        headers, data = parts[0]
        for line in headers.split(b"\r\n"):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-type" and not value.strip().lower().startswith(
                b"application/dicom"
            ):
                raise ValueError(f"WADO-RS {wado}: the part is not application/dicom")
        with open(os.path.join(directory, f"instance_{i:05d}.dcm"), "wb") as f:
            f.write(data)
    return len(sops)


def read_series(
    url, study, series, auth=None, ca_file=None, timeout=300, max_instances=4096, max_bytes=3 << 30
):
    """What cuimg.dicom.read_series returns for the series (volume (D, H, W), spacing (x, y, z)
    mm, datasets in volume order), retrieved from the DICOMweb service at `url`."""
    with tempfile.TemporaryDirectory(prefix="cuimg-dicomweb-") as directory:  # mode 0700
        retrieve_series(
            url, study, series, directory, auth, ca_file, timeout, max_instances, max_bytes
        )
        return dicom.read_series(directory)


def store_series(
    url,
    files_or_datasets,
    auth=None,
    ca_file=None,
    timeout=300,
    max_instances=4096,
    max_bytes=3 << 30,
):
    """Stores instances with one STOW-RS POST {url}/studies: a directory (its files), or a list of
    file paths or pydicom datasets. Returns (instances stored, the stored series' URL or "").
    DicomwebError unless the server reports every instance stored (quoting a FailureReason)."""
    if isinstance(files_or_datasets, (str, os.PathLike)):
        directory = files_or_datasets
        files_or_datasets = [
            os.path.join(directory, n)
            for n in sorted(os.listdir(directory))
            if os.path.isfile(os.path.join(directory, n))
        ]
    if not files_or_datasets:
        raise ValueError("store_series: nothing to store")
    if len(files_or_datasets) > max_instances:
        raise ValueError(
            f"STOW-RS: {len(files_or_datasets)} instances, more than the limit of {max_instances}"
        )
    instances = []
    for item in files_or_datasets:
        if isinstance(item, (str, os.PathLike)):
            with open(item, "rb") as f:
                instances.append(f.read())
        else:
            buffer = io.BytesIO()
            item.save_as(buffer, write_like_original=False)
            instances.append(buffer.getvalue())
    if sum(len(i) for i in instances) > max_bytes:
        raise ValueError(f"STOW-RS: the series is larger than the limit of {max_bytes} bytes")
    boundary = secrets.token_hex(16)
    while any(boundary.encode() in i for i in instances):
        boundary = secrets.token_hex(16)
    body = (
        b"".join(
            b"--" + boundary.encode() + b"\r\nContent-Type: application/dicom\r\n\r\n" + i + b"\r\n"
            for i in instances
        )
        + b"--"
        + boundary.encode()
        + b"--\r\n"
    )
    stow = f"{url.rstrip('/')}/studies"
    status, _, answer = _request(
        "POST",
        stow,
        _DICOM_JSON,
        auth,
        ca_file,
        timeout,
        64 << 20,
        body,
        f"{_ONE_DICOM_PART}; boundary={boundary}",
    )
    if status not in (200, 202, 409):
        raise _http_error("STOW-RS", stow, status, answer)
    try:
        result = json.loads(answer)
    except ValueError:
        result = None
    if not isinstance(result, dict):
        raise DicomwebError(f"STOW-RS {stow}: HTTP {status} without a DICOM JSON answer", status)
    failed, stored = _items(result, "00081198"), _items(result, "00081199")
    if failed or status != 200:
        reason = _first_value(failed[0], "00081197") if failed else None
        raise DicomwebError(
            f"STOW-RS {stow}: HTTP {status}, {len(failed)} of {len(instances)} "
            f"instances failed" + (f" (FailureReason {reason})" if reason else ""),
            status,
        )
    if len(stored) != len(instances):
        raise DicomwebError(
            f"STOW-RS {stow}: the server acknowledged {len(stored)} of {len(instances)} instances",
            status,
        )
    instance_url = _first_string(stored[0], "00081190")
    return (
        len(stored),
        instance_url.rsplit("/instances/", 1)[0] if "/instances/" in instance_url else "",
    )
