;;; stallapp.el --- Lisp functions for stallwatch's Emacs tests -*- lexical-binding: t -*-

;; Natively compiled by the tests (Emacs 28 and later with native
;; compilation): names with the characters comp.el hexes and leaves out of
;; the C name, a lambda, and a loop that stalls the command loop when a
;; timer runs it.

(defun stallapp-count (n)
  "Sums I mod 7 for I below N: the busy work."
  (let ((x 0))
    (dotimes (i n)
      (setq x (+ x (% i 7))))
    x))

(defun stallapp-stall (n)
  "Runs `stallapp-count' on N: called from a timer, it holds the command loop."
  (stallapp-count n))

(defun stallapp--list->vector* (list)
  (apply #'vector list))

(defun stallapp/Upper<=2 (a b)
  (<= a b))

(defun stallapp-apply (f)
  (funcall f 2))

(defun stallapp-lambda ()
  (stallapp-apply (lambda (x) (* x 3))))

(provide 'stallapp)
