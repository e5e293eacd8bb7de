import Basics
import CTAP2
import Foundation
import JSON
import WebAuthn

/// What `passkey info` shows: the authenticator, the roles one store plays (each with the transports, user
/// verification and getInfo options a platform sees), the PIN state and the store, as text or as JSON.
public struct AuthenticatorReport: Sendable {
    /// One role of the store: the command that plays it and the configuration it runs with.
    public struct Mode: Sendable {
        public var command: String
        public var role: String
        public var configuration: AuthenticatorConfiguration
    }

    /// How each command presents the authenticator: the same store, a different role, so different getInfo
    /// transports and user verification.
    public static let modes: [Mode] = [
        Mode(command: "serve", role: "security key over uhid or UDP (CTAPHID)", configuration: .securityKey),
        Mode(
            command: "serve --pin-only", role: "security key with a PIN only, like most hardware keys",
            configuration: .pinOnlySecurityKey),
        Mode(
            command: "scan", role: "phone over hybrid (caBLE v2)",
            configuration: .hybridPhone(oneRequestPerSession: true)),
    ]

    public var storePath: String
    public var passkeys: Int
    public var damagedPasskeys: Int
    /// The store's key derivation, as `KDFParameters` describes itself (`scrypt(N=…, r=…, p=…)`).
    public var keyDerivation: String
    public var settings: AuthenticatorSettings

    public init(
        storePath: String, passkeys: Int, damagedPasskeys: Int, keyDerivation: String, settings: AuthenticatorSettings
    ) {
        self.storePath = storePath
        self.passkeys = passkeys
        self.damagedPasskeys = damagedPasskeys
        self.keyDerivation = keyDerivation
        self.settings = settings
    }

    /// The report as lines of text, in sections: the authenticator, its modes, security, the store.
    public func lines() -> [String] {
        let configuration = AuthenticatorConfiguration()
        var lines = [
            "passkey authenticator",
            "  AAGUID      \(configuration.aaguid)",
            "  versions    FIDO_2_0, FIDO_2_1",
            "  algorithms  "
                + configuration.algorithms.map(\.description).joined(separator: ", ")
                + " (COSE " + configuration.algorithms.map { String($0.rawValue) }.joined(separator: ", ") + ")",
            "  extensions  " + AuthenticatorExtension.all.joined(separator: ", "),
            "  PIN/UV      protocols 2 and 1; built-in user verification is the store passphrase",
            "modes",
        ]
        let width = Self.modes.map(\.command.count).max() ?? 0
        let indent = String(repeating: " ", count: width + 3)
        for mode in Self.modes {
            let verification =
                switch mode.configuration.userVerification {
                case .whenRequested: "user verification when asked, and for passkeys while no PIN is set"
                case .always: "user verification for every request"
                case .pinOnly: "no built-in user verification: the PIN verifies, once a platform has set one"
                }
            lines.append("  \(mode.command.padding(toLength: width, withPad: " ", startingAt: 0)) \(mode.role)")
            lines.append(
                "\(indent)transports \(mode.configuration.transports.joined(separator: ", ")); \(verification)")
            // getInfo options as fido2-token -I lists them: "no" before one that is false.
            let options = mode.configuration.getInfoOptions(settings).map { $0.value ? $0.id : "no\($0.id)" }
            for (index, line) in Self.wrapped(options, width: 112 - indent.count - 8).enumerated() {
                lines.append("\(indent)\(index == 0 ? "options " : "        ")\(line)")
            }
        }
        lines += [
            "security",
            "  PIN         \(settings.isPINSet ? "set" : "not set")\(settings.forcePINChange ? " (must be changed)" : "")",
            "  PIN retries \(settings.pinRetries) of \(AuthenticatorSettings.maximumPINRetries)",
            "  UV retries  \(settings.uvRetries) of \(AuthenticatorSettings.maximumUVRetries)",
            "  min PIN     \(settings.minimumPINLength) code points",
            "  alwaysUv    \(settings.alwaysUV ? "on" : "off")",
            "store",
            "  path        \(storePath.terminalSafe)",
            "  passkeys    \(passkeys)\(damagedPasskeys > 0 ? " (and \(damagedPasskeys) damaged: see passkey list)" : "")",
            "  encryption  AES-256-GCM, key from \(keyDerivation)",
        ]
        return lines
    }

    /// The report as one JSON object, keys sorted and laid out two spaces deep.
    public func json() -> [UInt8] {
        JSONValue.sortedObject([
            "aaguid": .string(AuthenticatorConfiguration().aaguid.description),
            "versions": .strings(["FIDO_2_0", "FIDO_2_1"]),
            "algorithms": .strings(["ES256"]),
            "modes": .array(
                Self.modes.map { mode in
                    .sortedObject([
                        "command": .string(mode.command), "role": .string(mode.role),
                        "transports": .strings(mode.configuration.transports),
                        "userVerification": .string(Self.name(mode.configuration.userVerification)),
                        "attestation": .string(mode.configuration.attestationFormat.rawValue),
                        // What getInfo reports in this mode with this store's settings.
                        "options": .sortedObject(
                            mode.configuration.getInfoOptions(settings).map { ($0.id, .bool($0.value)) }),
                    ])
                }),
            "store": .string(storePath),
            "passkeys": .integer(passkeys),
            "damagedPasskeys": .integer(damagedPasskeys),
            "kdf": .string(keyDerivation),
            "pinSet": .bool(settings.isPINSet),
            "pinRetries": .integer(settings.pinRetries),
            "uvRetries": .integer(settings.uvRetries),
            "minPINLength": .integer(settings.minimumPINLength),
            "alwaysUv": .bool(settings.alwaysUV),
            "forcePINChange": .bool(settings.forcePINChange),
            "pinUvAuthProtocols": .array(PinUvAuthProtocol.supported.map { .integer($0.rawValue) }),
        ]).serialized(.pretty)
    }

    static func name(_ policy: UserVerificationPolicy) -> String {
        switch policy {
        case .whenRequested: "whenRequested"
        case .always: "always"
        case .pinOnly: "pinOnly"
        }
    }

    /// Words joined with ", " into lines of at most `width` characters (a longer word gets a line of its own).
    static func wrapped(_ words: [String], width: Int) -> [String] {
        var lines: [String] = []
        var line = ""
        for (index, word) in words.enumerated() {
            let piece = index == words.count - 1 ? word : "\(word),"
            if !line.isEmpty && line.count + 1 + piece.count > width {
                lines.append(line)
                line = piece
            } else {
                line = line.isEmpty ? piece : "\(line) \(piece)"
            }
        }
        if !line.isEmpty { lines.append(line) }
        return lines
    }
}
