import PasskeyProvider
import Testing

/// Which clipboard command a session gets (`password get --clip`); the commands themselves meet a real X server in
/// `Tests/Interop/test_passwords.py`.
@Suite struct ClipboardToolTests {
    static func finder(_ installed: [String]) -> (String) -> String? {
        { installed.contains($0) ? "/usr/bin/\($0)" : nil }
    }

    @Test(arguments: [
        // Wayland first when both are there (XWayland sets DISPLAY too).
        (["WAYLAND_DISPLAY": "wayland-0", "DISPLAY": ":0"], ["wl-copy", "wl-paste", "xclip"], "wl-copy"),
        (["WAYLAND_DISPLAY": "wayland-0", "DISPLAY": ":0"], ["xclip"], "xclip"),
        (["DISPLAY": ":1"], ["wl-copy", "wl-paste", "xclip"], "xclip"),
    ])
    func theSessionsToolIsChosen(environment: [String: String], installed: [String], expected: String) throws {
        let tool = try ClipboardTool.choose(environment: environment, find: Self.finder(installed))
        #expect(tool.name == expected)
        // The secret goes on standard input: no argument could carry it.
        #expect(tool.copy.first?.hasPrefix("/usr/bin/") == true)
    }

    @Test(arguments: [
        ([String: String](), ["xclip"], "no desktop session"),
        (["DISPLAY": ""], ["xclip"], "no desktop session"),
        (["WAYLAND_DISPLAY": "wayland-0"], ["wl-copy"], "wl-copy is not installed"),
        (["DISPLAY": ":0"], ["wl-copy", "wl-paste"], "xclip is not installed"),
    ])
    func withoutASessionOrAToolTheRefusalSaysWhich(
        environment: [String: String], installed: [String], reason: String
    ) {
        #expect {
            try ClipboardTool.choose(environment: environment, find: Self.finder(installed))
        } throws: { error in
            (error as? ProviderError)?.message.hasPrefix("cannot copy to the clipboard: \(reason)") == true
        }
    }

    @Test func commandsAreLookedUpOnThePath() {
        #expect(ClipboardTool.find("sh", environment: ["PATH": "/nonexistent:/bin"]) == "/bin/sh")
        #expect(ClipboardTool.find("sh", environment: ["PATH": "/nonexistent"]) == nil)
    }
}
