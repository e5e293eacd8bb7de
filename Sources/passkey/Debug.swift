import ArgumentParser
import Basics
import CTAP2
import Foundation
import PasskeyProvider
import SecurityKeyDriver
import TerminalIO
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
        options.onStatus = SecurityKeyLines.statusReporter()
        return options
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

        @OptionGroup var verbosity: OutputOptions

        func run() async throws {
            let securityKey = try await key.open()
            defer { Task { await securityKey.close() } }
            let info = try await securityKey.getInfo()
            for line in SecurityKeyLines.description(name: securityKey.name, device: securityKey.deviceInfo, info: info)
            {
                printLine(line)
            }
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
        @OptionGroup var format: JSONOption

        @OptionGroup var verbosity: OutputOptions

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
                        SecurityKeyLines.madeCredential(id: credentialID, format: format, flags: flags))
                }
            } catch let error as ProviderError {
                throw CheckFailed(error.message)
            }
            Terminal.shared.write(
                "passkey: getAssertion OK: signature verified with the registered key, flags "
                    + "\(SecurityKeyLines.flags(outcome.authenticationFlags))\n")
            if format.json {
                printJSON(String(decoding: outcome.json(relyingPartyID: rp), as: UTF8.self))
            } else {
                printLine("round trip: ok")
            }
        }
    }
}
