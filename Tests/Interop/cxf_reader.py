"""An independent reader and writer of the FIDO Credential Exchange Format 1.0 (Proposed Standard of 2025-08-14,
https://fidoalliance.org/specs/cx/cxf-v1.0-ps-20250814.html), written from the published member names, not from our
Swift: the header (`version` {major, minor}, `exporterRpId`, `exporterDisplayName`, `timestamp`, `accounts`), accounts
(`id`, `username`, `email`, `items`), items (`id`, `title`, `scope` {`urls`, `androidApps`}, `credentials`) and the
credential types `passkey`, `basic-auth` (EditableFields `username` of type string and `password` of type
concealed-string), `note` (EditableField `content`) and `totp` (`secret` in base32, `period`, `digits`, `username`,
`algorithm` one of sha1/sha256/sha512, `issuer`). Anything else is returned as `other`, by type and item title.

`read(document)` checks what the format requires and returns plain dictionaries; `document(items)` writes one.
"""

import base64
import binascii

ALGORITHMS = ("sha1", "sha256", "sha512")


class Invalid(ValueError):
    """The document breaks the format: the message names the member."""


def b64url_decode(text, where):
    if not isinstance(text, str):
        raise Invalid(f"{where} must be a base64url string")
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError) as error:
        raise Invalid(f"{where} is not base64url") from error


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _require(obj, key, kind, where):
    if key not in obj:
        raise Invalid(f"{where}.{key} is missing")
    if not isinstance(obj[key], kind):
        raise Invalid(f"{where}.{key} has the wrong type")
    return obj[key]


def _editable(field, where, types):
    """An EditableField: {"fieldType": ..., "value": ...}, its value a string."""
    if field is None:
        return None
    if not isinstance(field, dict) or not isinstance(field.get("value"), str):
        raise Invalid(f"{where} is not an EditableField")
    if field.get("fieldType") not in types:
        raise Invalid(f"{where}.fieldType is {field.get('fieldType')!r}, not one of {types}")
    return field["value"]


def read(doc):
    """The passkeys, logins, notes, one-time codes and other credentials of a CXF 1.0 document."""
    version = _require(doc, "version", dict, "header")
    if _require(version, "major", int, "version") != 1 or not isinstance(version.get("minor"), int):
        raise Invalid("version must be 1.x")
    _require(doc, "exporterRpId", str, "header")
    _require(doc, "exporterDisplayName", str, "header")
    _require(doc, "timestamp", int, "header")
    found = {"passkeys": [], "logins": [], "notes": [], "totp": [], "other": []}
    for a, account in enumerate(_require(doc, "accounts", list, "header")):
        where = f"accounts[{a}]"
        b64url_decode(_require(account, "id", str, where), where + ".id")
        _require(account, "username", str, where)
        _require(account, "email", str, where)
        for i, item in enumerate(_require(account, "items", list, where)):
            item_where = f"{where}.items[{i}]"
            b64url_decode(_require(item, "id", str, item_where), item_where + ".id")
            title = _require(item, "title", str, item_where)
            urls = list((item.get("scope") or {}).get("urls", []))
            for c, credential in enumerate(_require(item, "credentials", list, item_where)):
                cwhere = f"{item_where}.credentials[{c}]"
                kind = _require(credential, "type", str, cwhere)
                if kind == "passkey":
                    found["passkeys"].append({
                        "title": title, "urls": urls,
                        "credentialId": b64url_decode(_require(credential, "credentialId", str, cwhere), cwhere),
                        "rpId": _require(credential, "rpId", str, cwhere),
                        "username": _require(credential, "username", str, cwhere),
                        "userDisplayName": _require(credential, "userDisplayName", str, cwhere),
                        "userHandle": b64url_decode(_require(credential, "userHandle", str, cwhere), cwhere),
                        "key": b64url_decode(_require(credential, "key", str, cwhere), cwhere)})
                elif kind == "basic-auth":
                    found["logins"].append({
                        "title": title, "urls": urls,
                        "username": _editable(credential.get("username"), cwhere + ".username", ("string",)),
                        "password": _editable(credential.get("password"), cwhere + ".password",
                                              ("concealed-string",))})
                elif kind == "note":
                    found["notes"].append({"title": title, "urls": urls,
                                           "content": _editable(credential.get("content"), cwhere + ".content",
                                                                ("string",))})
                elif kind == "totp":
                    algorithm = _require(credential, "algorithm", str, cwhere)
                    if algorithm not in ALGORITHMS:
                        found["other"].append({"type": kind, "title": title})  # importers MUST ignore it
                        continue
                    secret = _require(credential, "secret", str, cwhere)
                    try:
                        key = base64.b32decode(secret + "=" * (-len(secret) % 8), casefold=True)
                    except binascii.Error as error:
                        raise Invalid(f"{cwhere}.secret is not base32") from error
                    found["totp"].append({
                        "title": title, "urls": urls, "secret": secret, "key": key,
                        "period": _require(credential, "period", int, cwhere),
                        "digits": _require(credential, "digits", int, cwhere),
                        "algorithm": algorithm, "username": credential.get("username"),
                        "issuer": credential.get("issuer")})
                else:
                    found["other"].append({"type": kind, "title": title})
    return found


def string_field(value):
    return {"fieldType": "string", "value": value}


def concealed_field(value):
    return {"fieldType": "concealed-string", "value": value}


def item(title, credentials, urls=(), item_id=None, created=1700000000):
    entry = {"id": b64url(item_id or title.encode()[:32] or b"i"), "creationAt": created, "modifiedAt": created,
             "title": title, "credentials": list(credentials)}
    if urls:
        entry["scope"] = {"urls": list(urls), "androidApps": []}
    return entry


def document(items, exporter="interop.test"):
    """A CXF 1.0 document with one account holding `items`."""
    return {"version": {"major": 1, "minor": 0}, "exporterRpId": exporter, "exporterDisplayName": "pytest",
            "timestamp": 1700000000,
            "accounts": [{"id": b64url(b"pytest"), "username": "", "email": "", "collections": [],
                          "items": list(items)}]}
