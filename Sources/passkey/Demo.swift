import ArgumentParser
import CBOR
import CTAP2
import Crypto
import Foundation
import PasskeyStore
import RelyingParty
import WebAuthn

extension Passkey {
    struct Demo: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Register a passkey and sign in with it, verified by a relying party, in one process.",
            discussion: """
                Uses a throw-away encrypted store in a temporary directory and answers its own prompts. The
                relying party side is this package's WebAuthn Level 3 verifier.
                """
        )

        @Option(help: "Relying party ID.") var rp = "example.com"
        @Option(help: "Account name to register.") var user = "alice"

        func run() async throws {
            let origin = "https://\(rp)"
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
                "passkey-demo-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            // A random passphrase that lives only in memory for the demo's throw-away store.
            let passphrase = AuthenticatorEnvironment.systemRandomBytes(24).base64URLEncodedString
            let store = try SQLiteCredentialStore.create(
                at: directory.appendingPathComponent("passkeys.sqlite"), passphrase: passphrase)
            defer { store.close() }
            let authenticator = Authenticator(
                environment: AuthenticatorEnvironment(
                    store: store, userInteraction: Unattended.LoggingApproval(report: { print("   " + $0) })))
            let verifier = RelyingPartyVerifier(
                relyingParty: RelyingPartyEntity(id: rp, name: "Demo RP"), origins: [origin])

            print("passkey demo: register a passkey and sign in with it")
            print("  relying party   \(rp), origin \(origin)  (verifier: Sources/RelyingParty)")
            print("  authenticator   AAGUID \(authenticator.configuration.aaguid)")
            print("  store           \(store.url.path)")
            print("                  private keys sealed with AES-256-GCM, key from \(store.kdfParameters)")
            print("  approvals       unattended: the demo answers its own prompts, and says so below")

            // 1. Registration.
            print("\n1. Registration")
            let userHandle = AuthenticatorEnvironment.systemRandomBytes(16)
            let registrationOptions = RegistrationOptions(
                challenge: AuthenticatorEnvironment.systemRandomBytes(32),
                user: UserEntity(id: userHandle, name: user, displayName: user.capitalized),
                userVerification: .required, residentKey: .required)
            print(
                "   RP sends options        \(String(decoding: registrationOptions.json(relyingParty: verifier.relyingParty), as: UTF8.self))"
            )
            let createData = CollectedClientData(
                type: .create, challenge: registrationOptions.challenge, origin: origin)
            print("   browser clientDataJSON  \(String(decoding: createData.jsonBytes, as: UTF8.self))")
            let makeCredential = CTAPClient.makeCredentialMessage(
                clientDataHash: Array(SHA256.hash(data: createData.jsonBytes)),
                relyingPartyID: rp, relyingPartyName: "Demo RP", userHandle: userHandle,
                userName: user, userDisplayName: user.capitalized)
            print("   → authenticatorMakeCredential, \(makeCredential.count) bytes of CTAP2 CBOR")
            let created = try MakeCredentialResponse(ctapResponse: await authenticator.handle(makeCredential))
            let attestationObject = created.attestationObject.bytes
            print("   ← attestation object, fmt \(created.attestationObject.format), \(attestationObject.count) bytes")
            let registration = try verifier.verifyRegistration(
                RegistrationResponse(clientDataJSON: createData.jsonBytes, attestationObject: attestationObject),
                options: registrationOptions)
            let record = registration.credential
            print("   RP verified the registration:")
            print("      credential ID  \(record.id.base64URLEncodedString)")
            print("      public key     ES256 (P-256), x \(Array(record.publicKey.x.prefix(8)).hexString)…")
            print(
                "      flags          \(Self.describe(registration.authenticatorData.flags)), sign count \(record.signCount)"
            )

            // 2. Sign-in with a discoverable credential: no allowCredentials, the user handle identifies the account.
            print("\n2. Sign-in (discoverable passkey, no allowCredentials)")
            let authenticationOptions = AuthenticationOptions(
                challenge: AuthenticatorEnvironment.systemRandomBytes(32), userVerification: .required)
            let getData = CollectedClientData(type: .get, challenge: authenticationOptions.challenge, origin: origin)
            print("   browser clientDataJSON  \(String(decoding: getData.jsonBytes, as: UTF8.self))")
            let getAssertion = CTAPClient.getAssertionMessage(
                relyingPartyID: rp, clientDataHash: Array(SHA256.hash(data: getData.jsonBytes)))
            print("   → authenticatorGetAssertion, \(getAssertion.count) bytes of CTAP2 CBOR")
            let assertion = try GetAssertionResponse(ctapResponse: await authenticator.handle(getAssertion))
            print(
                "   ← assertion: \(assertion.authenticatorData.count)-byte authenticator data, \(assertion.signature.count)-byte ECDSA signature"
            )
            let response = AuthenticationResponse(
                credentialID: assertion.credentialID, clientDataJSON: getData.jsonBytes,
                authenticatorData: assertion.authenticatorData, signature: assertion.signature,
                userHandle: assertion.userHandle)
            let authentication = try verifier.verifyAuthentication(
                response, options: authenticationOptions, credentials: [record])
            print("   RP verified the sign-in: signature valid for the stored public key")
            print(
                "      account        \(assertion.userName ?? user) (user handle \(userHandle.base64URLEncodedString))")
            print(
                "      flags          \(Self.describe(authentication.authenticatorData.flags)), user verified \(authentication.userVerified)"
            )

            // 3. The same assertion presented again, for a new challenge, is refused.
            print("\n3. Replay: the same assertion against a fresh challenge")
            let replayOptions = AuthenticationOptions(challenge: AuthenticatorEnvironment.systemRandomBytes(32))
            do {
                _ = try verifier.verifyAuthentication(response, options: replayOptions, credentials: [record])
                print("   the replay was accepted: this is a bug")
                throw ExitCode.failure
            } catch let error as RelyingPartyError {
                print("   RP refused it: \(error)")
            }

            print("\nDone: 1 passkey registered and used; its private key never left the authenticator's store.")
        }

        static func describe(_ flags: AuthenticatorFlags) -> String {
            let names: [(AuthenticatorFlags, String)] = [
                (.userPresent, "UP"), (.userVerified, "UV"), (.backupEligible, "BE"), (.backupState, "BS"),
                (.attestedCredentialData, "AT"), (.extensionData, "ED"),
            ]
            return names.filter { flags.contains($0.0) }.map(\.1).joined(separator: " ")
        }
    }
}
