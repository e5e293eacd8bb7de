import Basics
import CBOR
import CTAP2
import Crypto
import Foundation

/// One open session and what the engine needs around it: sending with errors mapped, the PIN token, silent probes.
struct SessionContext: Sendable {
    let session: any AuthenticatorSession
    let kind: AuthenticatorKind
    let declaredTransports: [AuthenticatorTransport]
    let environment: ClientEnvironment

    var info: AuthenticatorInfo { session.info }

    /// Decodes what authenticators this package did not build send: their CBOR need not be canonical.
    static let responseDecoder = CBORDecoder(requiresCanonicalForm: false)

    /// Sends one message; a transport failure is `NotAllowedError` (or `AbortError` when the task was cancelled).
    func send(_ message: [UInt8]) async throws(ClientError) -> [UInt8] {
        let response: [UInt8]
        do {
            response = try await session.send(message)
        } catch {
            throw Task.isCancelled ? ClientError(.aborted) : ClientError(.transport(error.description))
        }
        guard !response.isEmpty else { throw ClientError(.invalidResponse("an empty answer")) }
        return response
    }

    /// Sends and refuses an error status: `CTAPError`, for the callers that react to particular statuses.
    func exchange(_ message: [UInt8]) async throws(ClientError) -> Result<[UInt8], CTAPError> {
        let response = try await send(message)
        guard response[0] == 0 else { return .failure(CTAPError(rawValue: response[0])) }
        return .success(response)
    }

    /// The status as the error the page sees: a cancelled task is `AbortError`, the rest by Chromium's mapping.
    static func failure(_ status: CTAPError) -> ClientError {
        if status == .keepaliveCancel && Task.isCancelled { return ClientError(.aborted) }
        return ClientError(.authenticator(status))
    }

    // MARK: User verification

    /// How the user is verified for one request on this authenticator (Chromium's PINUVDisposition, in short).
    enum Verification: Equatable {
        /// No verification asked for.
        case none
        /// The `uv` option: built-in verification.
        case builtIn
        /// A pinUvAuthToken obtained with the PIN.
        case pinToken
    }

    /// Whether verification is wanted for `requirement` (WebAuthn L3 §5.1.3 "effective user verification
    /// requirement", §5.1.4.2 step 2) and, when required, whether this authenticator can do it at all.
    func wantsVerification(_ requirement: UserVerification) throws(ClientError) -> Bool {
        switch requirement {
        case .required:
            guard info.canVerifyUser else { throw ClientError(.userVerificationUnavailable) }
            return true
        case .preferred: return info.canVerifyUser
        case .discouraged: return false
        }
    }

    /// A pinUvAuthToken obtained with the user's PIN (CTAP 2.1 §6.5.5.7): getPinUvAuthTokenUsingPinWithPermissions
    /// with `permissions` for `relyingPartyID`, or getPinToken on CTAP 2.0 keys. A wrong PIN asks again with the
    /// attempts left; a blocked PIN (before anyone is asked, when no tries are left) or a cancelled prompt ends the
    /// ceremony. The PIN goes only into the encrypted
    /// PIN hash and is never kept.
    func pinToken(permissions: PinUvAuthPermissions, relyingPartyID: String) async throws(ClientError)
        -> PinUvAuthToken
    {
        guard let pinProtocol = info.preferredPinUvAuthProtocol else {
            throw ClientError(.noEligibleAuthenticator("the security key offers no PIN protocol this client supports"))
        }
        var request = PINRequest(relyingPartyID: relyingPartyID, retriesLeft: try? await pinRetries(pinProtocol))
        request.key = session.name
        while true {
            // No tries left: the key would refuse any PIN, so nobody is asked for one.
            if request.retriesLeft == 0 { throw Self.failure(.pinBlocked) }
            guard let pin = await environment.userInterface.collectPIN(request) else {
                throw ClientError(.userCancelled)
            }
            guard (try? PinUvAuthSession.pinHash(pin)) != nil else {
                // A PIN no key can have (under 4 code points, over 63 bytes): asked again, costing no retry.
                request.previousAttemptWasWrong = true
                continue
            }
            let agreement = try await keyAgreementResponse(pinProtocol)
            let session: PinUvAuthSession
            let message: [UInt8]
            do {
                session = try PinUvAuthSession(
                    pinUvAuthProtocol: pinProtocol, keyAgreementResponse: agreement,
                    platformKey: platformKeyAgreementKey())
                message = try session.pinTokenMessage(
                    pin: pin, permissions: info.supportsPermissionTokens ? permissions : nil,
                    relyingPartyID: relyingPartyID, iv: environment.randomBytes(16))
            } catch {
                throw ClientError(.invalidResponse("the authenticator's key agreement key is not usable"))
            }
            switch try await exchange(message) {
            case .success(let response):
                do {
                    return try session.token(from: response)
                } catch {
                    throw ClientError(.invalidResponse("the PIN token could not be read"))
                }
            case .failure(.pinInvalid):
                request.retriesLeft = try? await pinRetries(pinProtocol)
                request.previousAttemptWasWrong = true
            case .failure(let status):
                throw Self.failure(status)
            }
        }
    }

    /// getPINRetries.
    private func pinRetries(_ pinProtocol: PinUvAuthProtocol) async throws(ClientError) -> Int {
        switch try await exchange(CTAPClient.getPINRetriesMessage(pinUvAuthProtocol: pinProtocol)) {
        case .success(let response):
            do {
                return try CTAPClient.pinRetries(from: response).retries
            } catch {
                throw ClientError(.invalidResponse("getPINRetries: \(error)"))
            }
        case .failure(let status): throw Self.failure(status)
        }
    }

    /// getKeyAgreement, then the platform's half: its COSE key and the shared secret. The platform key comes from
    /// the environment's random bytes.
    func agreeKey(_ pinProtocol: PinUvAuthProtocol) async throws(ClientError) -> (CBORValue, [UInt8]) {
        let response = try await keyAgreementResponse(pinProtocol)
        let platformKey = platformKeyAgreementKey()
        do {
            let authenticatorKey = try CTAPClient.keyAgreementKey(fromResponse: response)
            let shared = try pinProtocol.sharedSecret(privateKey: platformKey, platformKey: authenticatorKey)
            return (PinUvAuthProtocol.coseKey(platformKey.publicKey), shared)
        } catch {
            throw ClientError(.invalidResponse("the authenticator's key agreement key is not usable"))
        }
    }

    /// The raw getKeyAgreement answer (status byte and CBOR), for hmac-secret.
    func keyAgreementResponse(_ pinProtocol: PinUvAuthProtocol) async throws(ClientError) -> [UInt8] {
        switch try await exchange(CTAPClient.getKeyAgreementMessage(pinUvAuthProtocol: pinProtocol)) {
        case .success(let response): return response
        case .failure(let status): throw Self.failure(status)
        }
    }

    /// A P-256 key agreement key from the environment's random bytes (seeded in tests).
    func platformKeyAgreementKey() -> P256.KeyAgreement.PrivateKey {
        while true {
            if let key = try? P256.KeyAgreement.PrivateKey(rawRepresentation: environment.randomBytes(32)) {
                return key
            }
        }
    }

    // MARK: Credential lists

    /// The descriptors as CTAP sends them (`type` and `id`; Chromium leaves transports out too), without those
    /// longer than the authenticator's maxCredentialIdLength, which cannot be its own.
    func descriptors(_ list: [PublicKeyCredentialDescriptor]) -> [CredentialDescriptor] {
        list.filter { descriptor in
            descriptor.type == "public-key" && info.maximumCredentialIDLength.map { descriptor.id.count <= $0 } ?? true
        }.map { CredentialDescriptor(id: $0.id) }
    }

    /// Which of `list` this authenticator holds, found by silent getAssertions (`up: false`, no user verification)
    /// over batches of at most `batchSize`, as Chromium probes lists longer than maxCredentialCountInList. Returns the
    /// first credential found, or nothing.
    func probe(_ list: [CredentialDescriptor], relyingPartyID: String, batchSize: Int) async throws(ClientError)
        -> [CredentialDescriptor]
    {
        let size = max(1, batchSize)
        var start = 0
        while start < list.count {
            let batch = Array(list[start..<min(start + size, list.count)])
            start += size
            let request = GetAssertionRequest(
                relyingPartyID: relyingPartyID, clientDataHash: SHA256.hash(data: Array("probe".utf8)).bytes,
                allowList: batch, options: ["up": false])
            switch try await exchange(request.message) {
            case .success(let response):
                let found: GetAssertionResponse
                do {
                    found = try GetAssertionResponse(
                        ctapResponse: response, decoder: Self.responseDecoder,
                        defaultCredentialID: batch.count == 1 ? batch[0].id : nil)
                } catch {
                    throw ClientError(.invalidResponse("a silent probe's answer: \(error)"))
                }
                return [CredentialDescriptor(id: found.credentialID)]
            case .failure(.noCredentials): continue
            case .failure(let status): throw Self.failure(status)
            }
        }
        return []
    }

    /// Whether silent probes may be sent: not to a phone, which answers one request per session (Chromium's
    /// `NoSilentRequests` for hybrid devices).
    var allowsSilentRequests: Bool { kind != .hybrid }

    /// `list` cut to what one request may carry: as it is when it fits maxCredentialCountInList (one when getInfo
    /// gives none), else the one credential a probe finds, as Chromium's FilterAndBatchCredentialDescriptors
    /// (`device/fido/make_credential_task.cc`, used by the make-credential and get-assertion tasks) batches it.
    func fitted(_ list: [CredentialDescriptor], relyingPartyID: String) async throws(ClientError)
        -> [CredentialDescriptor]
    {
        let limit = info.maximumCredentialCountInList ?? 1
        guard list.count > limit, allowsSilentRequests else { return list }
        return try await probe(list, relyingPartyID: relyingPartyID, batchSize: limit)
    }

    /// The transports a response reports: the platform's own for this computer; for a phone or key, those it
    /// reaches us by and those its getInfo lists. Unique, in lexicographical order (§5.2.1 `[[transports]]`).
    var responseTransports: [AuthenticatorTransport] {
        var transports = Set(declaredTransports)
        if kind != .platform {
            transports.formUnion(info.transports.compactMap(AuthenticatorTransport.init(rawValue:)))
        }
        return transports.sorted()
    }
}
