// One button per stall; runAll() runs them in order with pauses between.
import UIKit

final class StallViewController: UIViewController {
    private let stalls: [(String, () -> Void)] = [
        ("Busy 600 ms", { _ = Stalls.busyPrimes() }),
        ("Semaphore 800 ms", { Stalls.waitForWorker() }),
        ("Write 64 MB", { Stalls.writeCache() }),
        ("Sync to a busy queue", { Stalls.syncToWorker() }),
        ("Hitch 120 ms", { Stalls.hitch() }),
    ]

    override func viewDidLoad() {
        super.viewDidLoad()
        view.backgroundColor = .systemBackground
        let stack = UIStackView()
        stack.axis = .vertical
        stack.spacing = 16
        stack.translatesAutoresizingMaskIntoConstraints = false
        for (index, stall) in stalls.enumerated() {
            let button = UIButton(type: .system)
            button.setTitle(stall.0, for: .normal)
            button.tag = index
            button.addTarget(self, action: #selector(tapped(_:)), for: .touchUpInside)
            stack.addArrangedSubview(button)
        }
        view.addSubview(stack)
        NSLayoutConstraint.activate([
            stack.centerXAnchor.constraint(equalTo: view.centerXAnchor),
            stack.centerYAnchor.constraint(equalTo: view.centerYAnchor),
        ])
    }

    @objc private func tapped(_ sender: UIButton) {
        stalls[sender.tag].1()
    }

    /// Every stall once, a second apart, each from its own run-loop turn.
    func runAll(from index: Int = 0) {
        guard index < stalls.count else { return }
        stalls[index].1()
        DispatchQueue.main.asyncAfter(deadline: .now() + 1) { self.runAll(from: index + 1) }
    }
}
