import Foundation
import FuzzTargets
import Testing

/// Every committed corpus file, the seeds and the reproducers of past findings among them, replayed through
/// its target in the ordinary build: a finding that comes back fails here, without libFuzzer.
struct CorpusReplayTests {
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz/Corpus", isDirectory: true)

    static func files(of target: FuzzTarget) -> [URL] {
        let folder = corpus.appendingPathComponent(target.name, isDirectory: true)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.sorted().map { folder.appendingPathComponent($0) }
    }

    @Test func targetNamesAreUniqueAndAtLeastTwelve() {
        let names = FuzzTargets.all.map(\.name)
        #expect(Set(names).count == names.count)
        #expect(names.count >= 12)
    }

    @Test(arguments: FuzzTargets.all.map(\.name))
    func committedCorpusReplays(_ name: String) async throws {
        let target = try #require(FuzzTargets.named(name))
        let inputs = try Self.files(of: target).map { Array(try Data(contentsOf: $0)) }
        #expect(!inputs.isEmpty, "no committed corpus for \(name): run passkey-fuzz seeds Tests/Fuzz/Corpus")
        await Self.onOwnThread { for input in inputs { target.run(input) } }
    }

    @Test(arguments: FuzzTargets.all.map(\.name))
    func seedsReplay(_ name: String) async throws {
        let target = try #require(FuzzTargets.named(name))
        await Self.onOwnThread {
            let seeds = target.seeds()
            #expect(!seeds.isEmpty)
            for seed in seeds { target.run(seed) }
        }
    }

    /// Targets block their thread while async work runs (libFuzzer calls them synchronously); on a thread of the
    /// cooperative pool that work could wait for the very thread it blocks.
    static func onOwnThread(_ body: @escaping @Sendable () -> Void) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread {
                body()
                continuation.resume()
            }.start()
        }
    }
}
