import Foundation
import Hybrid
import PasskeyFilesIO
import PasskeyProvider
import PasskeySettings
import Proximity
import Testing

/// The precedence rule (flag > environment > file > default, each value with its source), the file's checks, and
/// reading the file from the configuration directory.
struct SettingsTests {
    let file = SettingsFile(
        path: "/c/passkey/settings.toml",
        values: [.store: "/file/store.sqlite", .relay: "wss://file.example", .radio: "sim", .timeout: "30"])

    @Test func aFlagBeatsTheEnvironmentWhichBeatsTheFileWhichBeatsTheDefault() throws {
        let environment = ["PASSKEY_RELAY": "ws://environment.example:8080", "PASSKEY_TIMEOUT": "45"]
        let settings = try Settings(
            flags: [.timeout: "5"], environment: environment, file: file, defaultStore: "/default/passkeys.sqlite")
        #expect(settings.timeout == SettingValue(5, from: .flag))
        #expect(
            settings.relay
                == SettingValue(try TunnelServerBaseURL(string: "ws://environment.example:8080"), from: .environment))
        #expect(settings.store == SettingValue("/file/store.sqlite", from: .file))
        #expect(settings.radio == SettingValue(.simulated(host: "127.0.0.1", port: 47250), from: .file))
        #expect(settings.relayCA == SettingValue(nil, from: .default))

        let defaults = try Settings(environment: [:], file: nil, defaultStore: "/default/passkeys.sqlite")
        #expect(defaults.entries.map { $0.source } == Array(repeating: .default, count: SettingKey.allCases.count))
        #expect(defaults.store.value == "/default/passkeys.sqlite")
        #expect(defaults.timeout.value == 120)
        #expect(defaults.radio.value == .hci(adapter: 0))
        #expect(defaults.entries.map { $0.key } == SettingKey.allCases)
    }

    @Test func theConsentSettingsHaveTheirDefaultsSourcesAndChecks() throws {
        let defaults = try Settings(environment: [:], file: nil, defaultStore: "/d")
        #expect(defaults.consent == SettingValue(.auto, from: .default))
        #expect(defaults.consentUVWindow == SettingValue(5, from: .default))
        #expect(defaults.consentTimeout == SettingValue(60, from: .default))
        let file = try SettingsFile(
            path: "/c/settings.toml", text: "consent = \"queue\"\nconsent-uv-window = 2.5\nconsent-timeout = 30\n")
        let settings = try Settings(
            flags: [.consent: "notification"], environment: ["PASSKEY_CONSENT_UV_WINDOW": "0"], file: file,
            defaultStore: "/d")
        #expect(settings.consent == SettingValue(.notification, from: .flag))
        #expect(settings.consentUVWindow == SettingValue(0, from: .environment))
        #expect(settings.consentTimeout == SettingValue(30, from: .file))
        #expect(try Settings(environment: [:], file: file, defaultStore: "/d").consentUVWindow.value == 2.5)
        #expect(settings.entries.map(\.value).suffix(3) == ["notification", "0", "30"])
        for (flags, environment, expected) in [
            (
                [SettingKey.consent: "desktop"], [:],
                "--consent: desktop is not a consent channel (terminal, notification, queue or auto)"
            ),
            ([:], ["PASSKEY_CONSENT": "Terminal"], "PASSKEY_CONSENT: Terminal is not a consent channel"),
            ([.consentUVWindow: "-1"], [:], "--consent-uv-window: -1 is not a number of minutes from 0 to 1440"),
            ([:], ["PASSKEY_CONSENT_UV_WINDOW": "1441"], "PASSKEY_CONSENT_UV_WINDOW: 1441 is not a number of minutes"),
            ([.consentTimeout: "0"], [:], "--consent-timeout: 0 is not a number of seconds above 0 and at most 3600"),
        ] as [([SettingKey: String], [String: String], String)] {
            #expect {
                _ = try Settings(flags: flags, environment: environment, file: nil, defaultStore: "/d")
            } throws: { error in
                (error as? SettingsError)?.message.hasPrefix(expected) == true
            }
        }
        #expect {
            _ = try SettingsFile(path: "/c/settings.toml", text: "consent-uv-window = \"5\"\n")
        } throws: { error in
            (error as? SettingsError)?.message
                == "/c/settings.toml: consent-uv-window must be a number of minutes, as in consent-uv-window = 5"
        }
        #expect {
            _ = try SettingsFile(path: "/c/settings.toml", text: "consent = 1\n")
        } throws: { error in
            (error as? SettingsError)?.message
                == "/c/settings.toml: consent must be a string in quotes, as in consent = \"…\""
        }
    }

    @Test func anEmptyVariableIsUnset() throws {
        let settings = try Settings(
            environment: ["PASSKEY_STORE": "", "PASSKEY_BLE": ""], file: file, defaultStore: "/d")
        #expect(settings.store.source == .file)
        #expect(settings.radio.source == .file)
    }

    @Test func aBadValueIsRefusedNamingWhereItCameFrom() {
        let cases: [([SettingKey: String], [String: String], SettingsFile?, String)] = [
            ([.timeout: "0"], [:], nil, "--timeout: 0 is not a number of seconds above 0 and at most 3600"),
            ([:], ["PASSKEY_TIMEOUT": "soon"], nil, "PASSKEY_TIMEOUT: soon is not a number of seconds"),
            ([:], ["PASSKEY_BLE": "usb"], nil, "PASSKEY_BLE: usb is not a radio (hci, hci:N, hci-raw:N, sim or sim:HOST:PORT)"),
            (
                [:], [:], SettingsFile(path: "/c/settings.toml", values: [.relay: "https://x.example"]),
                "/c/settings.toml: relay: https://x.example is not a relay: tunnel server URL must start with ws://"
            ),
            ([.store: ""], [:], nil, "--store: the store path is empty"),
        ]
        for (flags, environment, file, expected) in cases {
            #expect {
                _ = try Settings(flags: flags, environment: environment, file: file, defaultStore: "/d")
            } throws: { error in
                (error as? SettingsError)?.message.hasPrefix(expected) == true
            }
        }
        // A bad value in a weaker source is not used, and not looked at, when a stronger source gives one.
        #expect(throws: Never.self) {
            try Settings(
                flags: [.timeout: "9"], environment: ["PASSKEY_TIMEOUT": "soon"], file: nil, defaultStore: "/d")
        }
    }

    @Test func theFileIsReadAsTOML() throws {
        let text = """
            # Where the passkeys are, and how to reach phones.
            store = "~/keys/passkeys.sqlite"
            relay = "wss://relay.example:8443"
            relay-ca = "/etc/passkey/relay-ca.pem"
            radio = "hci:1"
            timeout = 90.5
            """
        let file = try SettingsFile(path: "/c/settings.toml", text: text)
        #expect(
            file.values == [
                .store: "~/keys/passkeys.sqlite", .relay: "wss://relay.example:8443",
                .relayCA: "/etc/passkey/relay-ca.pem", .radio: "hci:1", .timeout: "90.5",
            ])
        let settings = try Settings(environment: ["HOME": "/home/p"], file: file, defaultStore: "/d")
        #expect(settings.store == SettingValue("/home/p/keys/passkeys.sqlite", from: .file))
        #expect(settings.timeout == SettingValue(90.5, from: .file))
        #expect(try SettingsFile(path: "/c/settings.toml", text: "timeout = 60").values == [.timeout: "60"])
        #expect(try SettingsFile(path: "/c/settings.toml", text: "").values == [:])
    }

    @Test func aDamagedFileIsRefusedWithItsLineOrKey() {
        let cases: [(String, String)] = [
            ("store = \"/s\"\nrelay = \n", "/c/settings.toml: line 2: "),
            (
                "store = \"/s\"\ncolour = \"blue\"\n",
                "/c/settings.toml: colour is not a setting (the settings are store, relay, relay-ca, radio, timeout, consent, consent-uv-window, consent-timeout)"
            ),
            ("[relay]\nurl = \"wss://x\"\n", "/c/settings.toml: relay must be a string in quotes"),
            ("timeout = \"120\"\n", "/c/settings.toml: timeout must be a number of seconds, as in timeout = 120"),
            ("radio = 1\n", "/c/settings.toml: radio must be a string in quotes"),
        ]
        for (text, expected) in cases {
            #expect {
                _ = try SettingsFile(path: "/c/settings.toml", text: text)
            } throws: { error in
                let message = (error as? SettingsError)?.message ?? ""
                return message.hasPrefix(expected) && !message.contains("\n")
            }
        }
    }

    @Test func theFileComesFromTheConfigurationDirectory() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("settings-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let environment = ["XDG_CONFIG_HOME": directory.path, "HOME": "/nonexistent"]
        #expect(try Settings.loadFile(environment: environment) == nil)

        let url = directory.appendingPathComponent("passkey/settings.toml")
        try FileManager.default.createDirectory(
            at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data("radio = \"sim:127.0.0.1:9\"\n".utf8).write(to: url)
        let file = try #require(try Settings.loadFile(environment: environment))
        #expect(file.path == url.path)
        let settings = try Settings.resolve(environment: environment, file: file)
        #expect(settings.radio == SettingValue(.simulated(host: "127.0.0.1", port: 9), from: .file))
        // The default store is the data directory's, whatever PASSKEY_STORE says (that is the environment's value).
        let withStore = try Settings.resolve(
            environment: environment.merging(["PASSKEY_STORE": "/e/s.sqlite", "XDG_DATA_HOME": "/data"]) { $1 },
            file: nil)
        #expect(withStore.store == SettingValue("/e/s.sqlite", from: .environment))
        #expect(
            try Settings.resolve(environment: ["XDG_DATA_HOME": "/data"], file: nil).store.value
                == "/data/passkey/passkeys.sqlite")

        // A file others may change is refused, naming it.
        chmod(url.path, 0o666)
        #expect {
            _ = try Settings.loadFile(environment: environment)
        } throws: { error in
            (error as? SettingsError)?.message.hasPrefix(
                "cannot use the settings file \(url.path): other users may change it") == true
        }
    }
}
