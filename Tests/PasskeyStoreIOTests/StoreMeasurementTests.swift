import CTAP2
import Crypto
import Foundation
import PasskeyStoreIO
import Testing

/// Prints what the getAssertion hot path costs with this store. Information only: nothing here asserts a time.
struct StoreMeasurementTests {
    /// Runs `body` `iterations` times and returns the mean time per call in microseconds.
    private func microseconds(_ iterations: Int, _ body: () throws -> Void) rethrows -> Double {
        let clock = ContinuousClock()
        let elapsed = try clock.measure {
            for _ in 0..<iterations {
                try body()
            }
        }
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return seconds * 1e6 / Double(iterations)
    }

    @Test func hotPathCostIsPrinted() async throws {
        let scratch = try Scratch()
        let store = try scratch.makeStore()
        let credentials = (0..<50).map { index in
            makeCredential(relyingParty: "rp\(index % 10).example", userHandle: [UInt8(index)])
        }
        let clock = ContinuousClock()
        let saveTime = try clock.measure {
            for credential in credentials {
                try store.save(credential)
            }
        }
        store.close()

        // Cold: a fresh store decrypts and imports each key once.
        let reopened = try SQLiteCredentialStore.open(at: scratch.url(), passphrase: "correct horse")
        var index = 0
        let cold = try microseconds(credentials.count) {
            let found = try reopened.credential(id: credentials[index].id)
            #expect(found != nil)
            index += 1
        }
        let target = credentials[7]
        let warmByID = try microseconds(2000) { _ = try reopened.credential(id: target.id) }
        let warmByParty = try microseconds(2000) { _ = try reopened.credentials(forRelyingParty: "rp7.example") }
        let digest = Array(SHA256.hash(data: Array("client data".utf8)))
        let sign = try microseconds(500) { _ = try target.privateKey.signature(digest, []) }
        let lookupAndSign = try microseconds(500) {
            let found = try #require(try reopened.credential(id: target.id))
            _ = try found.privateKey.signature(digest, [])
        }
        let saveMilliseconds: Double =
            Double(saveTime.components.seconds) * 1e3 + Double(saveTime.components.attoseconds) / 1e15
        let perSave = saveMilliseconds / Double(credentials.count)
        func format(_ value: Double) -> String { String(format: "%.1f", value) }
        print(
            """
            PasskeyStore hot path (this build, \(credentials.count) passkeys): \
            save \(format(perSave)) ms each (fsync per commit); \
            credential(id:) cold \(format(cold)) µs, warm \(format(warmByID)) µs; \
            credentials(forRelyingParty:) warm, 5 results \(format(warmByParty)) µs; \
            P-256 sign \(format(sign)) µs; lookup + sign \(format(lookupAndSign)) µs \
            = \(format(sign / lookupAndSign))× the raw sign rate
            """
        )
    }
}
