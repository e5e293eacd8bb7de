import ArgumentParser
import Basics
import CTAP2
import Foundation
import PasskeyProvider
import Hybrid
import HybridDriver
import JSON
import PasskeyFilesIO
import PasskeyStoreIO
import Proximity
import PublicSuffix
import SecurityKeyDriver
import Synchronization
import WebAuthnClient
import WebAuthnClientDriver
import WebAuthnClientIO

extension Passkey.Client {
    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "navigator.credentials.create(): relying party options JSON in, credential JSON out.",
            discussion: """
                Reads the PublicKeyCredentialCreationOptionsJSON your server produced, checks the origin against the \
                RP ID with the Public Suffix List (and related origins), lets you choose this computer, a phone or a \
                security key, and prints the RegistrationResponseJSON that PublicKeyCredential.toJSON() gives, for \
                your server to verify unchanged. Errors are the DOMException a browser raises, one line each, with \
                its own exit status (Docs/Client.md).
                """)

        @OptionGroup var options: WebAuthnClientOptions

        @Option(
            help: ArgumentHelp(
                "How the request is mediated (default: optional, or what the options' wrapper says). conditional: "
                    + "an automatic passkey upgrade, made on this computer with no dialog only right after "
                    + "`client get --password` gave this account's saved password to the page; else NotAllowedError.",
                valueName: "optional|required|conditional"))
        var mediation: CredentialMediation?

        @OptionGroup var verbosity: OutputOptions

        func validate() throws {
            if mediation == .immediate {
                throw ValidationError("--mediation immediate is for `client get` only.")
            }
        }

        func run() async throws {
            let options = options
            let mediation = mediation
            try await options.run {
                var request = try PublicKeyCredentialCreationOptions(json: try options.readOptions())
                if !options.hint.isEmpty { request.hints = options.hint }
                try await options.appAssociation.check(
                    rpID: request.relyingParty.id, origin: options.origin, store: options.store)
                let engine = try await options.makeEngine(
                    ceremony: .create,
                    thisComputer: ThisComputer(access: options.store.access(), approval: options.approval.mode))
                let chosen =
                    mediation ?? request.wrapperMediation.flatMap(CredentialMediation.init(rawValue:)) ?? .optional
                let credential = try await engine.create(request, origin: options.origin, mediation: chosen)
                options.printCredential(
                    json: credential.json(.compact), pretty: credential.json(.pretty),
                    summary: [
                        "created a passkey (\(credential.authenticatorAttachment.rawValue), transports "
                            + "\(credential.transports.map(\.rawValue).joined(separator: ","))): "
                            + credential.id.base64URLEncodedString
                    ])
            }
        }
    }

    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "navigator.credentials.get(): relying party options JSON in, assertion JSON out.",
            discussion: """
                Reads the PublicKeyCredentialRequestOptionsJSON your server produced and signs in the way a browser \
                does: this computer's passkeys first (listed without the passphrase), a phone by QR code, a \
                security key when asked for. --mediation conditional lists this computer's passkeys as autofill \
                does and shows a QR code only when you pick the phone; immediate, and \
                --prefer-immediately-available, fail at once with NotAllowedError when no passkey here matches. \
                Prints the AuthenticationResponseJSON for your server to verify unchanged (Docs/Client.md).
                """)

        @OptionGroup var options: WebAuthnClientOptions

        @Option(help: "How the request is mediated (default: optional, or what the options' wrapper says).")
        var mediation: CredentialMediation?

        @Flag(help: "Fail at once, showing nothing, unless a passkey on this computer matches.")
        var preferImmediatelyAvailable = false

        @Option(
            help: ArgumentHelp(
                "A user name typed into the sign-in form: a conditional request becomes a modal one for that user's "
                    + "passkeys.", valueName: "name"))
        var username: String?

        @Flag(
            help: """
                Also offer the passwords saved for the RP ID (`passkey password add`) in the same chooser; choosing \
                one prints {"type":"password","id":USER,"password":PASSWORD} instead of an assertion.
                """)
        var password = false

        @OptionGroup var verbosity: OutputOptions

        func run() async throws {
            let options = options
            let mediation = mediation
            let parameters = (preferImmediatelyAvailable, username)
            let offerPasswords = password
            try await options.run {
                let request = try PublicKeyCredentialRequestOptions(json: try options.readOptions())
                try await options.appAssociation.check(
                    rpID: request.relyingPartyID, origin: options.origin, store: options.store)
                let thisComputer = ThisComputer(access: options.store.access(), approval: options.approval.mode)
                let engine = try await options.makeEngine(ceremony: .get, thisComputer: thisComputer)
                let chosen =
                    mediation ?? request.wrapperMediation.flatMap(CredentialMediation.init(rawValue:)) ?? .optional
                let getParameters = GetParameters(
                    mediation: chosen, preferImmediatelyAvailableCredentials: parameters.0,
                    hints: options.hint.isEmpty ? nil : options.hint, userName: parameters.1)
                let credential: AuthenticationCredential
                if offerPasswords {
                    let result = try await engine.get(
                        request, origin: options.origin, parameters: getParameters,
                        passwords: { relyingPartyID in thisComputer.passwords(relyingPartyID: relyingPartyID) })
                    switch result {
                    case .publicKey(let assertion): credential = assertion
                    case .password(let login):
                        PasswordPrompts.printPicked(try await thisComputer.password(for: login), json: options.json)
                        return
                    }
                } else {
                    credential = try await engine.get(request, origin: options.origin, parameters: getParameters)
                }
                options.printCredential(
                    json: credential.json(.compact), pretty: credential.json(.pretty),
                    summary: [
                        "signed in (\(credential.authenticatorAttachment.rawValue)) with "
                            + credential.id.base64URLEncodedString
                    ])
            }
        }
    }
}
