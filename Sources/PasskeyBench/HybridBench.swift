import Basics
import ArgumentParser
import CTAP2
import Crypto
import Foundation
import Hybrid

/// `Tools/bench hybrid-core`: the handshake against its crypto floor, and advert trial decryption.
struct HybridCoreBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hybrid-core",
        abstract: "Raw P-256 ECDH and key generation, full in-memory handshakes, advert trial decryption."
    )

    @Option(help: "Seconds per measurement slice.") var seconds: Double = 0.5
    @Option(help: "Number of interleaved slices per figure; medians are reported.") var rounds = 7

    func run() throws {
        print("passkey-bench hybrid-core: \(rounds) interleaved slices of \(seconds) s per figure, medians")
        let timer = SliceTimer(seconds: seconds)
        let a = P256.KeyAgreement.PrivateKey()
        let b = P256.KeyAgreement.PrivateKey().publicKey
        let qrKey = P256.KeyAgreement.PrivateKey()
        let psk = AuthenticatorEnvironment.systemRandomBytes(32)

        let secret = AuthenticatorEnvironment.systemRandomBytes(16)
        let eidKey = KeyDerivation.eidKey(qrSecret: secret)
        let ours = eidKey.encrypt(
            try AdvertPlaintext(
                nonce: AuthenticatorEnvironment.systemRandomBytes(10), routingID: RoutingID(bytes: [1, 2, 3]),
                domain: .google))
        let strangers = (0..<1024).map { _ in AuthenticatorEnvironment.systemRandomBytes(20) }
        var strangerIndex = 0

        var samples: [String: [Double]] = [:]
        for _ in 0..<rounds {
            let ecdh = try timer.rate { _ = try a.sharedSecretFromKeyAgreement(with: b) }
            let keygen = try timer.rate { _ = P256.KeyAgreement.PrivateKey.randomSessionKey() }
            let handshake = try timer.rate {
                let (message, waiting) = try HandshakeInitiator(
                    kind: .qrInitiated(qrKey: qrKey), psk: psk,
                    ephemeralKey: P256.KeyAgreement.PrivateKey.randomSessionKey()
                ).makeMessage()
                let response = try HandshakeResponder.respond(
                    to: message, kind: .qrInitiated(qrPublicKey: qrKey.publicKey), psk: psk,
                    ephemeralKey: P256.KeyAgreement.PrivateKey.randomSessionKey())
                let reply = response.message
                _ = try waiting.processResponse(reply)
            }
            let floorSeconds = 2 / keygen + 4 / ecdh
            samples["ecdh", default: []].append(ecdh)
            samples["keygen", default: []].append(keygen)
            samples["handshake", default: []].append(handshake)
            samples["ratio", default: []].append(handshake * floorSeconds)
            samples["keygen default", default: []].append(try timer.rate { _ = P256.KeyAgreement.PrivateKey() })
            samples["advert reject", default: []].append(
                try timer.rate {
                    strangerIndex = (strangerIndex + 1) & 1023
                    _ = try? eidKey.decrypt(strangers[strangerIndex])
                })
            samples["advert accept", default: []].append(try timer.rate { _ = try eidKey.decrypt(ours) })
        }
        let median = samples.mapValues { $0.sorted()[$0.count / 2] }
        let format = AuthenticatorBench.format
        print("")
        print("raw P-256 ECDH                      \(format(median["ecdh"]!))/s")
        print(
            "P-256 key generation (raw import)   \(format(median["keygen"]!))/s   (swift-crypto default: \(format(median["keygen default"]!))/s)"
        )
        print(
            "full QR-initiated handshakes        \(format(median["handshake"]!))/s   both roles, "
                + String(format: "%.0f µs each", 1e6 / median["handshake"]!))
        let ratio = median["ratio"]!
        print(
            String(
                format: "handshake vs crypto floor (2 key generations + 4 ECDH): %.2f (target ≥ 0.7: %@)", ratio,
                ratio >= 0.7 ? "met" : "NOT MET"))
        let reject = median["advert reject"]!
        print(
            "advert trial decryption, not ours   \(format(reject))/s   (target ≥ 200,000/s: \(reject >= 200_000 ? "met" : "NOT MET"))"
        )
        print("advert trial decryption, ours       \(format(median["advert accept"]!))/s")
        if ratio < 0.7 || reject < 200_000 { throw ExitCode(2) }
    }
}

/// Runs a body repeatedly for a slice of time (after a short warm-up) and returns its rate per second.
struct SliceTimer {
    var seconds: Double

    func rate(_ body: () throws -> Void) throws -> Double {
        for _ in 0..<20 { try body() }
        let clock = ContinuousClock()
        let start = clock.now
        var count = 0
        while clock.now - start < .seconds(seconds) {
            for _ in 0..<10 { try body() }
            count += 10
        }
        return Double(count) / (clock.now - start).inSeconds
    }

    func rate(_ body: () async throws -> Void) async throws -> Double {
        for _ in 0..<20 { try await body() }
        let clock = ContinuousClock()
        let start = clock.now
        var count = 0
        while clock.now - start < .seconds(seconds) {
            for _ in 0..<10 { try await body() }
            count += 10
        }
        return Double(count) / (clock.now - start).inSeconds
    }
}
