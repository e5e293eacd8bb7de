import ArgumentParser
import Basics
import Foundation
import PasskeyProvider
import TerminalIO
import WebAuthnClient
import WebAuthnClientIO

extension CredentialSignal.Kind: ExpressibleByArgument {}

extension Passkey.Client {
    struct Signal: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "PublicKeyCredential.signal…(): a site tells this computer's passkeys what it knows.",
            discussion: """
                unknown takes {rpId, credentialId} (signalUnknownCredential: the site deleted that passkey), \
                accepted {rpId, userId, allAcceptedCredentialIds} (signalAllAcceptedCredentials), details {rpId, \
                userId, name, displayName} (signalCurrentUserDetails). The RP ID is checked against --origin as \
                `client create` and `get` check it. A passkey the site does not know is hidden (not offered, left \
                out of `passkey list`; `passkey list --hidden` and `passkey unhide`) and deleted 30 days later; \
                accepted also shows again a hidden passkey it lists; details renames the account. Like the \
                browser's promise, the result is the same whatever this computer holds (Docs/Client.md).
                """)

        @Argument(help: ArgumentHelp("Which signal.", valueName: "unknown|accepted|details"))
        var kind: CredentialSignal.Kind

        @Option(
            name: .customLong("options"),
            help: ArgumentHelp(
                "The signal's options JSON, as the page passes it; - reads standard input.",
                valueName: "file|-"),
            completion: .file(extensions: ["json"]))
        var optionsPath: String

        @Option(
            help: ArgumentHelp("The origin of the page signalling, for example https://example.com.", valueName: "url"))
        var origin: String

        @OptionGroup var store: StoreOptions
        @OptionGroup var format: JSONOption
        @OptionGroup var verbosity: OutputOptions

        /// The largest options file read: an accepted-credentials list of 1,000 IDs fits many times over.
        static let maximumOptionsBytes = 1 << 20

        func run() async throws {
            let json: [UInt8]
            do {
                json = try CommandInput.read(optionsPath, limit: Self.maximumOptionsBytes, what: "options file")
            } catch {
                throw CommandFailure(error.description)
            }
            let kind = kind
            let origin = origin
            let access = store.access()
            let signal: CredentialSignal
            do {
                signal = try CredentialSignal(kind: kind, json: json)
                _ = try await SuffixListRelyingPartyIDChecker.fromSystemList(
                    relatedOrigins: HTTPSRelatedOriginsSource()
                )
                .check(origin: origin, requested: signal.relyingPartyID)
            } catch let error as ClientError {
                Terminal.shared.write(ClientLines.failure(error, nobodyAnswered: false))
                throw ExitCode(error.exitStatus)
            }
            try await PasskeyCatalog(access: access).deliver(signal)
            // The page's promise resolves to undefined whatever the store holds; so does this.
            if format.json {
                printLine(#"{"outcome":"signalled"}"#)
            } else {
                printLine("signalled \(kind.rawValue) for \(signal.relyingPartyID.terminalSafe)")
            }
        }
    }
}
