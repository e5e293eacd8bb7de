import Basics
import CBOR
import Crypto
import Foundation
import Synchronization

/// A large-blob array write in progress (CTAP 2.1 §6.10.2): the length promised at offset 0 and what has come.
struct PendingLargeBlobWrite {
    var expectedLength: Int
    var received: [UInt8]
}

/// authenticatorLargeBlobs parameters (CTAP 2.1 §6.10).
struct LargeBlobsRequest {
    var get: Int?
    var set: [UInt8]?
    var offset: Int
    var length: Int?
    var pinUvAuthParam: [UInt8]?
    var pinUvAuthProtocol: Int?

    init(cbor: CBORValue) throws(CTAPError) {
        let map = try cbor.parameters()
        get = try map.optional(1)?.int()
        set = try map.optional(2)?.bytes()
        offset = try map.required(3).int()
        length = try map.optional(4)?.int()
        pinUvAuthParam = try map.optional(5)?.bytes()
        pinUvAuthProtocol = try map.optional(6)?.int()
    }
}

extension Authenticator {
    /// The initial serialized large-blob array: an empty CBOR array and the first 16 bytes of its SHA-256.
    static let emptyLargeBlobArray: [UInt8] = [0x80] + Array(SHA256.hash(data: [0x80]).bytes.prefix(16))

    /// The longest fragment one get or set carries: the message size less 64 bytes of framing (§6.10).
    var maximumLargeBlobFragmentLength: Int { configuration.maximumMessageSize - 64 }

    /// authenticatorLargeBlobs (CTAP 2.1 §6.10.2): reads fragments of the serialized array, and writes a whole
    /// new array in fragments with a pinUvAuthToken holding the lbw permission. The array is replaced only when
    /// the last fragment has arrived and its trailing hash matches.
    func largeBlobs(_ request: LargeBlobsRequest) async throws(CTAPError) -> CBORValue? {
        guard request.offset >= 0 else { throw .invalidParameter }
        switch (request.get, request.set) {
        case (let count?, nil):
            guard request.length == nil, count >= 0 else { throw .invalidParameter }
            guard count <= maximumLargeBlobFragmentLength else { throw .invalidLength }
            let array = try await storeCall { try await $0.largeBlobArray() } ?? Self.emptyLargeBlobArray
            guard request.offset <= array.count else { throw .invalidParameter }
            let end = min(array.count, request.offset + count)
            return [1: .bytes(Array(array[request.offset..<end]))]
        case (nil, let fragment?):
            try await writeLargeBlobFragment(fragment, request)
            return nil
        default:
            throw .invalidParameter
        }
    }

    private func writeLargeBlobFragment(_ fragment: [UInt8], _ request: LargeBlobsRequest) async throws(CTAPError) {
        guard fragment.count <= maximumLargeBlobFragmentLength else { throw .invalidLength }
        let expectedLength: Int
        if request.offset == 0 {
            guard let length = request.length else { throw .invalidParameter }
            guard length <= configuration.maximumLargeBlobArrayLength else { throw .largeBlobStorageFull }
            guard length >= 17 else { throw .invalidParameter }
            expectedLength = length
        } else {
            guard request.length == nil else { throw .invalidParameter }
            let pending = state.withLock { $0.largeBlobWrite }
            guard let pending, request.offset == pending.received.count else { throw .invalidSequence }
            expectedLength = pending.expectedLength
        }

        // Built-in user verification is always configured, so writes always need a token (§6.10.2 step 5).
        guard let param = request.pinUvAuthParam else { throw .pinUvAuthTokenRequired }
        guard let version = request.pinUvAuthProtocol else { throw .missingParameter }
        let parameters = PinUvAuthParameters(param: param, pinUvAuthProtocol: try Self.supportedProtocol(version))
        var message = [UInt8](repeating: 0xFF, count: 32) + [0x0C, 0x00]
        withUnsafeBytes(of: UInt32(truncatingIfNeeded: request.offset).littleEndian) { message += $0 }
        message += SHA256.hash(data: fragment).bytes
        _ = try authorizeToken(parameters, message: message, permission: .largeBlobWrite, relyingPartyID: nil)

        guard request.offset + fragment.count <= expectedLength else { throw .invalidParameter }
        var received = request.offset == 0 ? [] : state.withLock { $0.largeBlobWrite?.received ?? [] }
        received += fragment
        guard received.count == expectedLength else {
            state.withLock {
                $0.largeBlobWrite = PendingLargeBlobWrite(expectedLength: expectedLength, received: received)
            }
            return
        }
        state.withLock { $0.largeBlobWrite = nil }
        let body = received.dropLast(16)
        guard constantTimeEqual(Array(SHA256.hash(data: Array(body)).bytes.prefix(16)), Array(received.suffix(16)))
        else { throw .integrityFailure }
        try await storeCall { [received] in try await $0.saveLargeBlobArray(received) }
    }
}
