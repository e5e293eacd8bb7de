"""`passkey domains match` and `passkey inspect banner` through the binary: the three applinks forms, JSON output,
exit statuses for bad files, and iOS 9 wildcards checked against Python's fnmatch as an independent matcher."""

import fnmatch
import json
import random
import subprocess

import pytest

from conftest import PASSKEY_BIN

APP = "ABCDE12345.com.example.app"

FILE_2015 = {
    "applinks": {
        "apps": [],
        "details": {APP: {"paths": ["/wwdc/news/", "/videos/wwdc/2015/*"]}, "ZYXWV98765.com.other": {"paths": ["*"]}},
    }
}

FILE_IOS9 = {
    "applinks": {
        "apps": [],
        "details": [
            {"appID": APP, "paths": ["NOT /settings/*", "/help/*", "/item/???"]},
            {"appID": "ZYXWV98765.com.other", "paths": ["*"]},
        ],
    }
}

FILE_IOS13 = {
    "applinks": {
        "defaults": {"caseSensitive": False},
        "substitutionVariables": {"food": ["pizza", "sushi"]},
        "details": [
            {
                "appIDs": [APP],
                "components": [
                    {"#": "no_universal_links", "exclude": True},
                    {"/": "/help/*", "?": {"articleNumber": "????"}},
                    {"/": "/$(lang)_$(region)/$(food)/"},
                    {"/": "/café/*", "percentEncoded": False},
                ],
            }
        ],
    },
    "webcredentials": {"apps": [APP]},
}


def run(*args, stdin=None):
    return subprocess.run(
        [PASSKEY_BIN, *args],
        capture_output=True,
        text=True,
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        timeout=60,
    )


def write(tmp_path, name, content):
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return str(path)


def match(path, url, app=APP, *extra):
    result = run("domains", "match", url, "--app", app, "--file", path, "--json", *extra)
    assert result.returncode in (0, 1), result.stderr
    verdict = json.loads(result.stdout)
    assert (result.returncode == 0) == (verdict["verdict"] == "open")
    return verdict


@pytest.mark.parametrize(
    "url, verdict, location",
    [
        ("https://example.com/wwdc/news/", "open", 'applinks.details["ABCDE12345.com.example.app"].paths[0]'),
        ("https://example.com/wwdc/news/?x=1#y", "open", 'applinks.details["ABCDE12345.com.example.app"].paths[0]'),
        ("https://example.com/wwdc/news", "browser", None),
        ("https://example.com/videos/wwdc/2015/a/b", "open", 'applinks.details["ABCDE12345.com.example.app"].paths[1]'),
        ("https://example.com/Videos/wwdc/2015/a", "browser", None),
        ("https://www.example.com/wwdc/news/", "browser", None),
    ],
)
def test_2015_form(tmp_path, url, verdict, location):
    answer = match(write(tmp_path, "aasa.json", FILE_2015), url, APP, "--domain", "example.com")
    assert answer["verdict"] == verdict, answer
    if location:
        assert answer["form"] == "2015" and answer["rule"]["location"] == location
    else:
        assert answer["rule"] is None and answer["form"] is None


@pytest.mark.parametrize(
    "url, verdict, index",
    [
        ("https://example.com/settings/x", "excluded", 0),
        ("https://example.com/help/a?b=c", "open", 1),
        ("https://example.com/item/123", "open", 2),
        ("https://example.com/item/1234", "browser", None),
    ],
)
def test_ios9_form(tmp_path, url, verdict, index):
    answer = match(write(tmp_path, "aasa.json", FILE_IOS9), url)
    assert answer["verdict"] == verdict
    if index is not None:
        assert answer["form"] == "ios9"
        assert answer["rule"] == {
            "location": f"applinks.details[0].paths[{index}]",
            "detail": 0,
            "index": index,
            "pattern": FILE_IOS9["applinks"]["details"][0]["paths"][index],
        }


@pytest.mark.parametrize(
    "url, verdict, index",
    [
        ("https://example.com/help/x?articleNumber=1234", "open", 1),
        ("https://example.com/HELP/x?articleNumber=1234#no_universal_links", "excluded", 0),
        ("https://example.com/help/x?articleNumber=12", "browser", None),
        ("https://example.com/fr_CA/Sushi/", "open", 2),
        ("https://example.com/fr_CA/tacos/", "browser", None),
        ("https://example.com/caf%C3%A9/menu", "open", 3),
    ],
)
def test_ios13_form(tmp_path, url, verdict, index):
    answer = match(write(tmp_path, "aasa.json", FILE_IOS13), url)
    assert answer["verdict"] == verdict, answer
    if index is not None:
        assert answer["form"] == "ios13" and answer["rule"]["index"] == index
        component = FILE_IOS13["applinks"]["details"][0]["components"][index]
        assert json.loads(answer["rule"]["pattern"]) == component


def test_text_output_names_the_rule(tmp_path):
    result = run("domains", "match", "https://example.com/settings/a", "--app", APP, "--file",
                 write(tmp_path, "aasa.json", FILE_IOS9))
    assert result.returncode == 1
    assert "verdict  excluded" in result.stdout
    assert "applinks.details[0].paths[0]  NOT /settings/*" in result.stdout
    assert "form     ios9" in result.stdout


def test_file_from_standard_input(tmp_path):
    result = run("domains", "match", "https://example.com/help/", "--app", APP, "--file", "-", "--json",
                 stdin=json.dumps(FILE_IOS9))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["verdict"] == "open"


@pytest.mark.parametrize(
    "content, fragment",
    [
        ('{"applinks": {"details": [{"appIDs": "x"}]}}', "applinks.details[0].appIDs must be an array"),
        ("<!doctype html><html></html>", "not valid JSON"),
        ('{"applinks": {"details": [{"components": [{"/": "$(nope)"}]}]}}', "$(nope)"),
        ("BIG", "larger than 131072 bytes"),
    ],
    ids=["wrong type", "html", "undefined variable", "oversize"],
)
def test_bad_files_exit_2_and_say_why(tmp_path, content, fragment):
    if content == "BIG":
        content = '{"a": "' + "x" * 140_000 + '"}'
    result = run("domains", "match", "https://example.com/", "--app", APP, "--file", write(tmp_path, "bad", content))
    assert result.returncode == 2
    assert fragment in result.stderr and result.stdout == ""


def test_bad_app_id_and_missing_file(tmp_path):
    result = run("domains", "match", "https://example.com/", "--app", "com.example.app", "--file",
                 write(tmp_path, "aasa.json", FILE_IOS9))
    assert result.returncode == 2 and "TEAMID.BUNDLEID" in result.stderr
    # Without --file, the file from the last `domains check` of the domain: none in a fresh store's table.
    result = run("domains", "match", "https://example.com/", "--app", APP, "--store", str(tmp_path / "store.sqlite"))
    assert result.returncode == 2 and "has not been checked" in result.stderr and "--file" in result.stderr
    result = run("domains", "match", "https://example.com/", "--app", APP, "--file", str(tmp_path / "absent"))
    assert result.returncode == 2 and "cannot read" in result.stderr


def test_ios9_wildcards_agree_with_fnmatch(tmp_path):
    """Random `*`/`?` patterns and paths over a small alphabet; fnmatchcase is the independent reference."""
    rng = random.Random(15)
    for round in range(40):
        pattern = "/" + "".join(rng.choice("ab/*?") for _ in range(rng.randrange(0, 7)))
        path = "/" + "".join(rng.choice("ab/") for _ in range(rng.randrange(0, 8)))
        file = write(tmp_path, f"aasa{round}.json", {"applinks": {"details": [{"appID": APP, "paths": [pattern]}]}})
        expected = "open" if fnmatch.fnmatchcase(path, pattern) else "browser"
        assert match(file, "https://example.com" + path)["verdict"] == expected, (pattern, path)


BANNER = """<!doctype html><html><head>
<!-- <meta name="apple-itunes-app" content="app-id=1"> -->
<META content='app-id=640199958, app-argument=https://example.com/a?b=1&amp;c=2, affiliate-data=ct=x, extra=1'
      NAME="Apple-iTunes-App">
<meta name="apple-itunes-app" content="app-id=2">
</head></html>"""


def test_banner_json(tmp_path):
    result = run("inspect", "banner", write(tmp_path, "page.html", BANNER), "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {
        "appId": "640199958",
        "appArgument": "https://example.com/a?b=1&c=2",
        "affiliateData": "ct=x",
        "unknownKeys": ["extra"],
        "tags": 2,
    }


def test_banner_text_and_stdin():
    result = run("inspect", "banner", "-", stdin=BANNER)
    assert result.returncode == 0, result.stderr
    assert "app-id          640199958" in result.stdout
    assert "only the first counts" in result.stdout


@pytest.mark.parametrize(
    "page, fragment",
    [
        ("<html><head></head></html>", "no <meta name=\"apple-itunes-app\"> tag"),
        ('<meta name="apple-itunes-app" content="app-id=id123">', "not all digits"),
    ],
)
def test_banner_refusals(tmp_path, page, fragment):
    result = run("inspect", "banner", write(tmp_path, "page.html", page))
    assert result.returncode == 1 and fragment in result.stderr


def test_banner_unreadable_file(tmp_path):
    result = run("inspect", "banner", str(tmp_path / "absent.html"))
    assert result.returncode == 2
