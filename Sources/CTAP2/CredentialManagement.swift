import Basics
import CBOR
import Crypto
import Foundation
import Synchronization
import WebAuthn

/// What enumerateRPsGetNextRP or enumerateCredentialsGetNextCredential hands out next.
enum PendingEnumeration {
    case relyingParties([CBORValue])
    case credentials([CBORValue])
}

extension Authenticator {
    /// authenticatorCredentialManagement subcommands (CTAP 2.1 §6.8).
    enum CredentialManagementSubcommand: Int {
        case getCredsMetadata = 0x01
        case enumerateRPsBegin = 0x02
        case enumerateRPsGetNextRP = 0x03
        case enumerateCredentialsBegin = 0x04
        case enumerateCredentialsGetNextCredential = 0x05
        case deleteCredential = 0x06
        case updateUserInformation = 0x07
    }

    /// authenticatorCredentialManagement (CTAP 2.1 §6.8): discoverable credentials only. Every subcommand but the
    /// two GetNext ones needs a pinUvAuthToken with the cm permission; a token bound to an RP ID reaches only that
    /// relying party's credentials and cannot list relying parties or read the metadata.
    func credentialManagement(_ request: SubcommandRequest) async throws(CTAPError) -> CBORValue? {
        guard let subcommand = CredentialManagementSubcommand(rawValue: request.subcommand) else {
            throw .invalidSubcommand
        }
        switch subcommand {
        case .enumerateRPsGetNextRP:
            return try nextEnumerated(relyingParties: true)
        case .enumerateCredentialsGetNextCredential:
            return try nextEnumerated(relyingParties: false)
        default:
            break
        }
        state.withLock { $0.pendingEnumeration = nil }
        guard let param = request.pinUvAuthParam else { throw .pinUvAuthTokenRequired }
        guard let version = request.pinUvAuthProtocol else { throw .missingParameter }
        let parameters = PinUvAuthParameters(param: param, pinUvAuthProtocol: try Self.supportedProtocol(version))
        let subcommandParameters = try request.parameters?.parameters()

        switch subcommand {
        case .getCredsMetadata:
            try await authorizeReading(parameters, request, relyingPartyIDHash: nil)
            let count = try await discoverableCredentials().count
            return [1: .int(count), 2: .int(max(0, configuration.credentialCapacity - count))]

        case .enumerateRPsBegin:
            try await authorizeReading(parameters, request, relyingPartyIDHash: nil)
            let credentials = try await discoverableCredentials()
            var seen = Set<String>()
            var entries: [CBORValue] = []
            for credential in credentials where seen.insert(credential.relyingPartyID).inserted {
                var rp: [CBORValue: CBORValue] = ["id": .text(credential.relyingPartyID)]
                if let name = credential.relyingPartyName { rp["name"] = .text(name) }
                entries.append([3: .map(rp), 4: .bytes(Self.relyingPartyIDHash(credential.relyingPartyID))])
            }
            return try beginEnumeration(entries, relyingParties: true)

        case .enumerateCredentialsBegin:
            guard let hash = try subcommandParameters?.optional(1)?.bytes() else { throw .missingParameter }
            try await authorizeReading(parameters, request, relyingPartyIDHash: hash)
            let matching = try await discoverableCredentials().filter {
                Self.relyingPartyIDHash($0.relyingPartyID) == hash
            }
            return try beginEnumeration(matching.map(Self.enumerated), relyingParties: false)

        case .deleteCredential:
            guard let descriptor = subcommandParameters?.optional(2) else { throw .missingParameter }
            let id = try CredentialDescriptor(cbor: descriptor).id
            let credential = try await storeCall { try await $0.credential(id: id) }
            try authorizeManagement(
                parameters, request, relyingPartyIDHash: credential.map { Self.relyingPartyIDHash($0.relyingPartyID) },
                needsCredential: true)
            guard let credential, credential.isDiscoverable else { throw .noCredentials }
            _ = try await storeCall { try await $0.deleteCredential(id: credential.id) }
            return nil

        case .updateUserInformation:
            guard let descriptor = subcommandParameters?.optional(2), let userMap = subcommandParameters?.optional(3)
            else { throw .missingParameter }
            let id = try CredentialDescriptor(cbor: descriptor).id
            let user = try userMap.parameters()
            let userHandle = try user.required("id").bytes()
            let name = try user.optional("name")?.text()
            let displayName = try user.optional("displayName")?.text()
            let credential = try await storeCall { try await $0.credential(id: id) }
            try authorizeManagement(
                parameters, request, relyingPartyIDHash: credential.map { Self.relyingPartyIDHash($0.relyingPartyID) },
                needsCredential: true)
            guard let credential, credential.isDiscoverable else { throw .noCredentials }
            guard credential.userHandle == userHandle else { throw .invalidParameter }
            _ = try await storeCall {
                try await $0.updateUser(credentialID: id, userName: name, userDisplayName: displayName)
            }
            return nil

        case .enumerateRPsGetNextRP, .enumerateCredentialsGetNextCredential:
            return nil  // answered above
        }
    }

    /// The read-only subcommands (getCredsMetadata, enumerateRPsBegin, enumerateCredentialsBegin): a cm token as
    /// for the others, or the persistent read-only token (CTAP 2.2 pcmr), which reaches every relying party.
    private func authorizeReading(
        _ parameters: PinUvAuthParameters, _ request: SubcommandRequest, relyingPartyIDHash: [UInt8]?
    ) async throws(CTAPError) {
        do {
            try authorizeManagement(parameters, request, relyingPartyIDHash: relyingPartyIDHash)
        } catch .pinAuthInvalid {
            guard try await verifiesWithPersistentToken(parameters, message: request.authenticatedBytes) else {
                throw .pinAuthInvalid
            }
        }
    }

    /// Verifies the pinUvAuthParam over `subCommand ‖ subCommandParams` and the cm permission. Without a hash the
    /// request spans every relying party, which an RP-bound token may not do.
    private func authorizeManagement(
        _ parameters: PinUvAuthParameters, _ request: SubcommandRequest, relyingPartyIDHash: [UInt8]?,
        needsCredential: Bool = false
    ) throws(CTAPError) {
        let now = environment.now()
        try state.withLock { (state) throws(CTAPError) in
            _ = try state.pinToken.authorize(
                pinUvAuthParam: parameters.param, message: request.authenticatedBytes,
                protocol: parameters.pinUvAuthProtocol, permission: .credentialManagement, relyingPartyID: nil,
                now: now)
            guard let bound = state.pinToken.relyingPartyID else { return }
            // An RP-bound token: only that relying party's credentials, never the lists that span all of them.
            guard let relyingPartyIDHash else {
                if needsCredential { return }
                throw .pinAuthInvalid
            }
            guard Self.relyingPartyIDHash(bound) == relyingPartyIDHash else { throw .pinAuthInvalid }
        }
    }

    private func beginEnumeration(_ entries: [CBORValue], relyingParties: Bool) throws(CTAPError) -> CBORValue {
        guard var first = entries.first?.mapValue else { throw .noCredentials }
        first[relyingParties ? 5 : 9] = .int(entries.count)
        let rest = Array(entries.dropFirst())
        if !rest.isEmpty {
            state.withLock {
                $0.pendingEnumeration = relyingParties ? .relyingParties(rest) : .credentials(rest)
            }
        }
        return .map(first)
    }

    private func nextEnumerated(relyingParties: Bool) throws(CTAPError) -> CBORValue {
        let next = state.withLock { state -> CBORValue? in
            switch state.pendingEnumeration {
            case .relyingParties(var rest) where relyingParties && !rest.isEmpty:
                let next = rest.removeFirst()
                state.pendingEnumeration = rest.isEmpty ? nil : .relyingParties(rest)
                return next
            case .credentials(var rest) where !relyingParties && !rest.isEmpty:
                let next = rest.removeFirst()
                state.pendingEnumeration = rest.isEmpty ? nil : .credentials(rest)
                return next
            default:
                state.pendingEnumeration = nil
                return nil
            }
        }
        guard let next else { throw .notAllowed }
        return next
    }

    /// The discoverable credentials: what credential management lists and getInfo's store state covers.
    func discoverableCredentials() async throws(CTAPError) -> [StoredCredential] {
        try await storeCall { try await $0.allCredentials() }.filter(\.isDiscoverable)
    }

    /// One enumerateCredentials entry: user, credential ID, public key, credProtect, the largeBlobKey when the
    /// credential has one, and thirdPartyPayment (CTAP 2.2).
    private static func enumerated(_ credential: StoredCredential) -> CBORValue {
        var user: [CBORValue: CBORValue] = ["id": .bytes(credential.userHandle)]
        if let name = credential.userName { user["name"] = .text(name) }
        if let displayName = credential.userDisplayName { user["displayName"] = .text(displayName) }
        var entry: [CBORValue: CBORValue] = [
            6: .map(user),
            7: CredentialDescriptor(id: credential.id).cborRepresentation,
            8: credential.privateKey.publicKey.coseRepresentation,
            10: .int(credential.credentialProtection.rawValue),
        ]
        if credential.largeBlobKey { entry[11] = .bytes(derivedSecret(credential, label: "largeBlobKey")) }
        entry[12] = .bool(credential.thirdPartyPayment)
        return .map(entry)
    }

    static func relyingPartyIDHash(_ relyingPartyID: String) -> [UInt8] {
        SHA256.hash(data: Array(relyingPartyID.utf8)).bytes
    }
}
