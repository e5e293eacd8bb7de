import CTAP2
import JSON
import Testing

@testable import TerminalIO

/// What `passkey info` shows: one store in three roles, its PIN state and the store itself.
struct AuthenticatorReportTests {
    static func report(settings: AuthenticatorSettings = AuthenticatorSettings(), damaged: Int = 0)
        -> AuthenticatorReport
    {
        AuthenticatorReport(
            storePath: "/home/a/passkeys.sqlite", passkeys: 1, damagedPasskeys: damaged,
            keyDerivation: "scrypt(N=2^15, r=8, p=1)", settings: settings)
    }

    /// The getInfo options of a security key without a PIN, as a platform reads them.
    static let keyOptions: [String: Bool] = [
        "rk": true, "up": true, "clientPin": false, "pinUvAuthToken": true, "makeCredUvNotRqd": true,
        "credMgmt": true, "perCredMgmtRO": true, "authnrCfg": true, "setMinPINLength": true, "alwaysUv": false,
        "largeBlobs": true,
    ]

    static func options(_ value: JSONValue?) -> [String: Bool] {
        guard case .object(let members)? = value else { return [:] }
        var options: [String: Bool] = [:]
        for member in members { if case .bool(let flag) = member.value { options[member.key] = flag } }
        return options
    }

    @Test func theJSONGivesEveryModeWithItsGetInfoOptions() throws {
        let json = try JSONValue(parsing: Self.report().json())
        #expect(json["aaguid"] == .string("8391e378-32c7-4aa5-ad16-6f0cf4ad7b23"))
        #expect(json["passkeys"] == .number(1))
        #expect(json["damagedPasskeys"] == .number(0))
        #expect(json["kdf"] == .string("scrypt(N=2^15, r=8, p=1)"))
        #expect(json["store"] == .string("/home/a/passkeys.sqlite"))
        guard case .array(let modes)? = json["modes"] else {
            Issue.record("modes is not an array: \(String(describing: json["modes"]))")
            return
        }
        #expect(modes.map { $0["command"] } == [.string("serve"), .string("serve --pin-only"), .string("scan")])
        #expect(
            modes.map { $0["role"] } == [
                .string("security key over uhid or UDP (CTAPHID)"),
                .string("security key with a PIN only, like most hardware keys"),
                .string("phone over hybrid (caBLE v2)"),
            ])
        #expect(modes.map { $0["transports"] } == [.strings(["usb"]), .strings(["usb"]), .strings(["hybrid"])])
        #expect(
            modes.map { $0["userVerification"] } == [.string("whenRequested"), .string("pinOnly"), .string("always")])
        #expect(modes.map { $0["attestation"] } == [.string("packed"), .string("packed"), .string("none")])
        var builtIn = Self.keyOptions
        builtIn["uv"] = true
        builtIn["uvAcfg"] = true
        #expect(Self.options(modes[0]["options"]) == builtIn)
        #expect(Self.options(modes[1]["options"]) == Self.keyOptions)
        #expect(Self.options(modes[2]["options"]) == ["rk": true, "up": true, "uv": true])
    }

    @Test func theJSONGivesThePINState() throws {
        let settings = AuthenticatorSettings(
            pinHash: [UInt8](repeating: 7, count: 16), pinCodePointCount: 8, pinRetries: 7, minimumPINLength: 6,
            alwaysUV: true)
        let text = Self.report(settings: settings).json()
        let json = try JSONValue(parsing: text)
        #expect(json["pinSet"] == .bool(true))
        #expect(json["pinRetries"] == .number(7))
        #expect(json["uvRetries"] == .number(8))
        #expect(json["minPINLength"] == .number(6))
        #expect(json["alwaysUv"] == .bool(true))
        #expect(json["forcePINChange"] == .bool(false))
        #expect(json["pinUvAuthProtocols"] == .array([.number(2), .number(1)]))
        // Sorted keys, two spaces deep.
        #expect(String(decoding: text, as: UTF8.self).hasPrefix("{\n  \"aaguid\": \"8391e378"))
    }

    @Test func theTextListsEachRoleAndWrapsItsOptions() {
        let text = Self.report().lines().joined(separator: "\n")
        #expect(
            text.contains(
                "  serve            security key over uhid or UDP (CTAPHID)\n                   transports usb;"))
        #expect(
            text.contains(
                """
                  serve --pin-only security key with a PIN only, like most hardware keys
                                   transports usb; no built-in user verification: the PIN verifies, once a \
                platform has set one
                                   options rk, up, noclientPin, pinUvAuthToken, makeCredUvNotRqd,
                """))
        #expect(
            text.contains(
                """
                  scan             phone over hybrid (caBLE v2)
                                   transports hybrid; user verification for every request
                """))
        #expect(text.contains("  PIN         not set\n"))
        #expect(text.contains("  passkeys    1\n"))
        #expect(text.hasSuffix("  encryption  AES-256-GCM, key from scrypt(N=2^15, r=8, p=1)"))
        for line in Self.report().lines() { #expect(line.count <= 112) }
    }

    @Test func theTextGivesThePINStateAndDamagedPasskeys() {
        let settings = AuthenticatorSettings(
            pinHash: [UInt8](repeating: 7, count: 16), pinRetries: 7, minimumPINLength: 6, alwaysUV: true,
            forcePINChange: true)
        let lines = Self.report(settings: settings, damaged: 2).lines()
        #expect(lines.contains("  PIN         set (must be changed)"))
        #expect(lines.contains("  PIN retries 7 of 8"))
        #expect(lines.contains("  UV retries  8 of 8"))
        #expect(lines.contains("  min PIN     6 code points"))
        #expect(lines.contains("  alwaysUv    on"))
        #expect(lines.contains("  passkeys    1 (and 2 damaged: see passkey list)"))
    }

    @Test func optionsWrapAtTheWidthAndALongWordKeepsALine() {
        #expect(AuthenticatorReport.wrapped(["aa", "bb", "cc"], width: 7) == ["aa, bb,", "cc"])
        #expect(
            AuthenticatorReport.wrapped(["a", "longerThanTheWidth", "b"], width: 5) == [
                "a,", "longerThanTheWidth,", "b",
            ])
        #expect(AuthenticatorReport.wrapped([], width: 5).isEmpty)
    }
}
