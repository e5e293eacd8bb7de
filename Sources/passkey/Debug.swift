import ArgumentParser
import Basics
import CTAP2
import CTAPHID
import Crypto
import Foundation
import PasskeyProvider
import SecurityKeyDriver
import Synchronization
import TerminalIO
import WebAuthn
import WebAuthnClient
import WebAuthnClientDriver

extension Passkey {
    /// Checks of this package against real devices, for Tools/vm-test and for people debugging a key; not part of the
    /// documented interface, so hidden from help.
    struct Debug: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Checks against real devices (for Tools/vm-test).", shouldDisplay: false,
            subcommands: [SecurityKeyCommands.self])
    }
}

extension Passkey.Debug {
    struct SecurityKeyCommands: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "security-key",
            abstract: "Talk to a FIDO2 security key as a platform does (Docs/SecurityKey.md).",
            subcommands: [GetInfo.self, RoundTrip.self])
    }
}

/// `--security-key` and how the key is used: the PIN from PASSKEY_CLIENT_PIN or the terminal (without echo), "touch
/// your security key" when it waits.
struct SecurityKeyOptionGroup: ParsableArguments {
    @Option(
        name: .customLong("security-key"),
        help: ArgumentHelp(
            "The key: hidraw:/dev/hidrawN, udp:HOST:PORT (passkey serve --udp) or auto (the one FIDO hidraw device).",
            valueName: "spec"))
    var securityKey = "auto"
    @Option(help: ArgumentHelp("How long the key may wait for a touch, in seconds.", valueName: "seconds"))
    var timeout = 60

    func validate() throws {
        do {
            _ = try SecurityKeySpec(parsing: securityKey)
        } catch {
            throw ValidationError("\(error)")
        }
        guard (1...600).contains(timeout) else { throw ValidationError("--timeout takes 1 to 600 seconds.") }
    }

    /// Opens the key with the status lines the CLI prints.
    func open() async throws -> SecurityKey {
        try await SecurityKey.open(try SecurityKeySpec(parsing: securityKey), options: options())
    }

    /// The key's time limit, and "touch your security key" and "busy" on standard error.
    func options() -> SecurityKeyOptions {
        var options = SecurityKeyOptions()
        options.requestTimeout = .seconds(timeout)
        let busyTold = Once()
        options.onStatus = { status in
            switch status {
            case .touchNeeded: Terminal.shared.write("passkey: touch your security key\n")
            case .busyElsewhere:
                if busyTold.first() {
                    Terminal.shared.write("passkey: the key is busy with another program; waiting\n")
                }
            case .processing: break
            }
        }
        return options
    }
}

/// True the first time it is asked, false afterwards.
final class Once: Sendable {
    private let done = Mutex(false)

    func first() -> Bool {
        done.withLock { done in
            defer { done = true }
            return !done
        }
    }
}

/// A check of `passkey debug` that failed: printed as `Error: …`, exit status 1.
struct CheckFailed: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension Passkey.Debug.SecurityKeyCommands {
    struct GetInfo: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "getinfo", abstract: "Print the key's CTAPHID description and authenticatorGetInfo.")

        @OptionGroup var key: SecurityKeyOptionGroup

        func run() async throws {
            let securityKey = try await key.open()
            defer { Task { await securityKey.close() } }
            let device = securityKey.deviceInfo
            let info = try await securityKey.getInfo()
            var capabilities: [String] = []
            if device.capabilities.contains(.wink) { capabilities.append("wink") }
            if device.capabilities.contains(.cbor) { capabilities.append("cbor") }
            if device.capabilities.contains(.nmsg) { capabilities.append("nmsg") }
            let version = device.deviceVersion
            print("security key: \(securityKey.name.terminalSafe)")
            print(
                "ctaphid: protocol \(device.protocolVersion), device \(version.major).\(version.minor).\(version.build), "
                    + "capabilities \(capabilities.joined(separator: " "))")
            print("versions: \(info.versions.map(\.terminalSafe).joined(separator: " "))")
            print("aaguid: \(AAGUID(bytes: info.aaguid)?.description ?? info.aaguid.hexString)")
            let options = info.options.sorted { $0.key < $1.key }.map { $0.value ? $0.key : "no\($0.key)" }
            print("options: \(options.map(\.terminalSafe).joined(separator: " "))")
            print("pinUvAuthProtocols: \(info.pinUvAuthProtocols.map { String($0.rawValue) }.joined(separator: " "))")
            print("transports: \(info.transports.map(\.terminalSafe).joined(separator: " "))")
            print("extensions: \(info.extensions.map(\.terminalSafe).joined(separator: " "))")
            await securityKey.close()
        }
    }

    struct RoundTrip: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "roundtrip",
            abstract: "Register a credential on the key and sign in with it, checking the signature.",
            discussion: """
                makeCredential, then getAssertion with the new credential in the allow list, each with a \
                clientDataJSON built as a browser builds it for the origin https://RP; the assertion's signature is \
                checked with the registered public key. With --uv, both ask for user verification: the key's own, \
                or its PIN (PASSKEY_CLIENT_PIN, or asked for on the terminal without echo). --json prints what a \
                relying party would receive, for checking elsewhere.
                """)

        @OptionGroup var key: SecurityKeyOptionGroup
        @Option(help: "The relying party ID.") var rp = "example.com"
        @Option(help: "The user name of the new credential.") var user = "alice"
        @Flag(help: "Require user verification (the key's own, or its PIN).") var uv = false
        @Flag(help: "Make a discoverable credential.") var discoverable = false
        @Flag(help: "Print one JSON object with both ceremonies' results (base64url) on standard output.") var json =
            false

        func run() async throws {
            let roundTrip = SecurityKeyRoundTrip(
                relyingPartyID: rp, userName: user, userVerification: uv, discoverable: discoverable)
            let outcome: SecurityKeyRoundTrip.Outcome
            do {
                outcome = try await roundTrip.run(
                    on: SecurityKeyAuthenticator(try SecurityKeySpec(parsing: key.securityKey), options: key.options()),
                    pin: SecurityKeyPIN.source(environment: ProcessInfo.processInfo.environment),
                    pinAttempts: ProcessInfo.processInfo.environment["PASSKEY_CLIENT_PIN"] == nil ? 3 : 1,
                    checker: try SuffixListRelyingPartyIDChecker.fromSystemList(relatedOrigins: nil),
                    random: AuthenticatorEnvironment.systemRandomBytes
                ) { credentialID, format, flags in
                    Terminal.shared.write(
                        "passkey: makeCredential OK: credential \(credentialID.hexString.prefix(16))…, format "
                            + "\(format.terminalSafe), flags \(Self.flags(flags))\n")
                }
            } catch let error as ProviderError {
                throw CheckFailed(error.message)
            }
            let (registration, authentication) = (outcome.registration, outcome.authentication)
            Terminal.shared.write(
                "passkey: getAssertion OK: signature verified with the registered key, flags "
                    + "\(Self.flags(outcome.authenticationFlags))\n")
            if json {
                let object: [String: Any] = [
                    "rpId": rp, "origin": outcome.origin, "credentialId": registration.id.base64URLEncodedString,
                    "registration": [
                        "clientDataJSON": registration.clientDataJSON.base64URLEncodedString,
                        "attestationObject": registration.attestationObject.base64URLEncodedString,
                        "challenge": outcome.registrationChallenge.base64URLEncodedString,
                    ],
                    "authentication": [
                        "clientDataJSON": authentication.clientDataJSON.base64URLEncodedString,
                        "authenticatorData": authentication.authenticatorData.base64URLEncodedString,
                        "signature": authentication.signature.base64URLEncodedString,
                        "challenge": outcome.authenticationChallenge.base64URLEncodedString,
                    ],
                    "userVerified": outcome.userVerified,
                ]
                let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
                print(String(decoding: data, as: UTF8.self))
            } else {
                print("round trip: ok")
            }
        }

        private static func flags(_ flags: AuthenticatorFlags) -> String {
            var names: [String] = []
            if flags.contains(.userPresent) { names.append("UP") }
            if flags.contains(.userVerified) { names.append("UV") }
            return names.isEmpty ? "none" : names.joined(separator: " ")
        }
    }
}
