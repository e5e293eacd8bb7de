import CBOR
import CTAP2
import Crypto
import Foundation
import Hybrid
import HybridDriver
import Proximity
import RelyingParty
import WebAuthn

/// Why a cross-device ceremony failed, in the words a user needs.
public enum CrossDeviceError: Error, Sendable, CustomStringConvertible {
    /// The browser-side checks refused the RP ID or origin; no QR code was shown.
    case origin(OriginCheckError)
    /// Nothing is registered for this RP in the state file, so a sign-in could not be verified.
    case noRegisteredPasskey(rpID: String)
    /// The QR code, radio, relay or hybrid protocol failed.
    case transport(HybridLinkError)
    /// The authenticator answered with a CTAP error (the user said no, no passkey for this site, …).
    case authenticator(CTAPError)
    /// The relying party refused the response.
    case verification(RelyingPartyError)

    public var description: String {
        switch self {
        case .origin(let error): error.description
        case .noRegisteredPasskey(let rpID):
            "no passkey for \(rpID) is registered in the relying party state: run `passkey client register` first"
        case .transport(let error): error.description
        case .authenticator(let error): "the authenticator refused: \(error)"
        case .verification(let error): "the relying party refused the response: \(error)"
        }
    }
}

/// Progress of a cross-device ceremony: the hybrid steps, then the relying party's verdict.
public enum CrossDeviceProgress: Hashable, Sendable {
    case hybrid(HybridClientProgress)
    /// The relying party verified the response.
    case verified
}

/// The outcome of a verified registration.
public struct CrossDeviceRegistration: Sendable {
    public var rpID: String
    public var userName: String
    public var credential: CredentialRecord
    public var attestationFormat: String
    public var userVerified: Bool
    /// WebAuthn prf `enabled`: the passkey was made with hmac-secret (only when prf was asked for).
    public var prfEnabled: Bool?
}

/// The outcome of a verified sign-in.
public struct CrossDeviceSignIn: Sendable {
    public var rpID: String
    /// The account the relying party matched by user handle (from its records).
    public var userName: String?
    public var credentialID: [UInt8]
    public var userVerified: Bool
    /// WebAuthn prf `results.first`, when a prf input was given and the passkey supports it.
    public var prfFirst: [UInt8]?
}

/// The computer's part of a cross-device registration or sign-in, as a browser and a relying party do it
/// together: check the origin, show the QR code, reach the phone over hybrid, send one CTAP request with a
/// browser-built clientDataJSON, and verify the answer with this package's WebAuthn verifier.
public struct CrossDeviceClient: Sendable {
    public var relyingParty: RelyingPartyEntity
    public var origin: String
    public var scanner: any ProximityScanner
    public var tunnelServer: TunnelServerBaseURL?
    public var environment: HybridEnvironment
    public var timeouts: HybridTimeouts
    public var progress: @Sendable (CrossDeviceProgress) -> Void

    /// Checks the RP ID against the origin at once: a mismatch throws before anything is shown or sent.
    public init(
        relyingParty: RelyingPartyEntity,
        origin: String? = nil,
        scanner: any ProximityScanner,
        tunnelServer: TunnelServerBaseURL? = nil,
        environment: HybridEnvironment = .system(),
        timeouts: HybridTimeouts = HybridTimeouts(),
        progress: @escaping @Sendable (CrossDeviceProgress) -> Void = { _ in }
    ) throws(CrossDeviceError) {
        do throws(OriginCheckError) {
            self.origin = try OriginCheck.validate(
                relyingPartyID: relyingParty.id, origin: origin ?? "https://\(relyingParty.id)")
        } catch {
            throw .origin(error)
        }
        self.relyingParty = relyingParty
        self.scanner = scanner
        self.tunnelServer = tunnelServer
        self.environment = environment
        self.timeouts = timeouts
        self.progress = progress
    }

    private var verifier: RelyingPartyVerifier {
        RelyingPartyVerifier(relyingParty: relyingParty, origins: [origin])
    }

    /// Registers a discoverable passkey for `userName` and adds it to `state`. With `prf`, asks for the WebAuthn prf
    /// extension (hmac-secret) and reports whether it is enabled.
    public func register(
        userName: String, displayName: String? = nil, prf: Bool = false, state: inout RelyingPartyState
    ) async throws(CrossDeviceError) -> CrossDeviceRegistration {
        let options = RegistrationOptions(
            challenge: randomBytes(32),
            user: UserEntity(id: randomBytes(16), name: userName, displayName: displayName ?? userName),
            userVerification: .required, residentKey: .required,
            // As a relying party does: the account's own passkeys, so the phone does not make a second one.
            excludeCredentials: state.accounts(for: relyingParty.id).filter { $0.userName == userName }.map(
                \.credential.id))
        let clientData = CollectedClientData(type: .create, challenge: options.challenge, origin: origin)
        let request = CTAPClient.makeCredentialMessage(
            clientDataHash: Array(SHA256.hash(data: clientData.jsonBytes)),
            relyingPartyID: relyingParty.id, relyingPartyName: relyingParty.name, userHandle: options.user.id,
            userName: userName, userDisplayName: options.user.displayName, excludeList: options.excludeCredentials,
            extensions: prf ? ["hmac-secret": true] : [:])
        let answer = try await exchange(request, requestType: .makeCredential)
        let created: MakeCredentialResponse
        do throws(CTAPError) {
            created = try MakeCredentialResponse(ctapResponse: answer)
        } catch {
            throw .authenticator(error)
        }
        let result: RegistrationResult
        do throws(RelyingPartyError) {
            result = try verifier.verifyRegistration(
                RegistrationResponse(
                    clientDataJSON: clientData.jsonBytes, attestationObject: created.attestationObject.bytes,
                    transports: ["hybrid"]),
                options: options)
        } catch {
            throw .verification(error)
        }
        progress(.verified)
        state.add(
            RelyingPartyState.Account(
                rpID: relyingParty.id, userName: userName, registered: Date(), credential: result.credential))
        return CrossDeviceRegistration(
            rpID: relyingParty.id, userName: userName, credential: result.credential,
            attestationFormat: created.attestationObject.format,
            userVerified: result.authenticatorData.flags.contains(.userVerified),
            prfEnabled: prf
                ? created.attestationObject.authenticatorData.extensions?.mapValue?["hmac-secret"] == true : nil)
    }

    /// Signs in with a passkey registered in `state`: discoverable (no allowList) unless `userName` names the
    /// account to use, whose credential then goes in the allowList. Updates the record in `state`. With `prf`, the
    /// WebAuthn prf input is evaluated through hmac-secret: a getKeyAgreement first, in the same hybrid session, so
    /// the phone must serve more than one request per session (`passkey scan --keep-open`); a phone that closes
    /// after the first request ends the sign-in with a transport error.
    public func signIn(
        userName: String? = nil, prf: [UInt8]? = nil, state: inout RelyingPartyState
    ) async throws(CrossDeviceError) -> CrossDeviceSignIn {
        let accounts = state.accounts(for: relyingParty.id).filter { userName == nil || $0.userName == userName }
        guard !accounts.isEmpty else { throw .noRegisteredPasskey(rpID: relyingParty.id) }
        let allowList = userName == nil ? [] : accounts.map(\.credential.id)
        let options = AuthenticationOptions(
            challenge: randomBytes(32), allowCredentials: allowList, userVerification: .required)
        let clientData = CollectedClientData(type: .get, challenge: options.challenge, origin: origin)
        let clientDataHash = Array(SHA256.hash(data: clientData.jsonBytes))
        let relyingPartyID = relyingParty.id
        let (answer, evaluation) = try await exchange(requestType: .getAssertion) {
            (connection) async throws(CrossDeviceError) -> ([UInt8], PRFEvaluation?) in
            var evaluation: PRFEvaluation? = nil
            if let prf {
                let keyAgreement = try await Self.request(CTAPClient.getKeyAgreementMessage(), on: connection)
                do throws(CTAPError) {
                    evaluation = try PRFEvaluation(
                        input: prf, keyAgreementResponse: keyAgreement, iv: randomBytes(16))
                } catch {
                    throw .authenticator(error)
                }
            }
            let request = CTAPClient.getAssertionMessage(
                relyingPartyID: relyingPartyID, clientDataHash: clientDataHash, allowList: allowList,
                extensions: evaluation?.extensionInput ?? [:])
            return (try await Self.request(request, on: connection), evaluation)
        }
        let assertion: GetAssertionResponse
        let prfFirst: [UInt8]?
        do throws(CTAPError) {
            assertion = try GetAssertionResponse(ctapResponse: answer)
            let authenticatorData = try? AuthenticatorData(bytes: assertion.authenticatorData)
            prfFirst = try authenticatorData.flatMap { (data) throws(CTAPError) in try evaluation?.result(from: data) }
        } catch {
            throw .authenticator(error)
        }
        let result: AuthenticationResult
        do throws(RelyingPartyError) {
            result = try verifier.verifyAuthentication(
                AuthenticationResponse(
                    credentialID: assertion.credentialID, clientDataJSON: clientData.jsonBytes,
                    authenticatorData: assertion.authenticatorData, signature: assertion.signature,
                    userHandle: assertion.userHandle),
                options: options, credentials: accounts.map(\.credential))
        } catch {
            throw .verification(error)
        }
        progress(.verified)
        state.update(result.credential)
        return CrossDeviceSignIn(
            rpID: relyingParty.id,
            userName: accounts.first { $0.credential.id == assertion.credentialID }?.userName,
            credentialID: assertion.credentialID, userVerified: result.userVerified, prfFirst: prfFirst)
    }

    /// One hybrid session carrying one CTAP request.
    private func exchange(_ request: [UInt8], requestType: HybridRequestType) async throws(CrossDeviceError)
        -> [UInt8]
    {
        try await exchange(requestType: requestType) { (connection) async throws(CrossDeviceError) in
            try await Self.request(request, on: connection)
        }
    }

    /// One hybrid session carrying the CTAP requests `body` sends.
    private func exchange<Result: Sendable>(
        requestType: HybridRequestType,
        _ body: (HybridClientLink) async throws(CrossDeviceError) -> Result
    ) async throws(CrossDeviceError) -> Result {
        let progress = progress
        let connection: HybridClientLink
        do throws(HybridLinkError) {
            connection = try await HybridClientLink.connect(
                requestType: requestType, scanner: scanner, tunnelServer: tunnelServer, timeouts: timeouts,
                environment: environment, progress: { progress(.hybrid($0)) })
        } catch {
            throw .transport(error)
        }
        do throws(CrossDeviceError) {
            let result = try await body(connection)
            await connection.close()
            return result
        } catch {
            await connection.close()
            throw error
        }
    }

    private static func request(_ message: [UInt8], on connection: HybridClientLink)
        async throws(CrossDeviceError) -> [UInt8]
    {
        do throws(HybridLinkError) {
            return try await connection.request(message)
        } catch {
            throw .transport(error)
        }
    }

    private func randomBytes(_ count: Int) -> [UInt8] { environment.randomBytes(count) }
}
